"""Helpers (no tests): a short "real" episode from the bench lab, recorded without ROS.

The bench lab plays the real lab (realism on), the scripted expert teleoperates at 50 Hz with
one-point JointTrajectory commands (as the teleop node sends them), and EpisodeRecorder writes
rclpy-free CDR bytes. The twin scene is built from the bench lab's TRUE cameras and object poses:
tests may read ground truth to isolate the replay from calibration and alignment errors.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import yaml
from rosbags.typesys import Stores, get_typestore

from comsim_bench_lab.config import LabConfig
from comsim_bench_lab.lab import BenchLab
from comsim_bench_lab.realism import RealismProfile
from comsim_core.episodes.topics import TopicSpec
from comsim_core.tasks.expert import ScriptedExpert
from comsim_teleop.recording import EpisodeRecorder
from comsim_twin.scene import TwinCamera, TwinObject, TwinScene

ROOT = Path(__file__).resolve().parents[2]
LAB_YAML = ROOT / 'config' / 'bench_lab' / 'lab.yaml'
REALISM_YAML = ROOT / 'config' / 'bench_lab' / 'realism.yaml'
TS = get_typestore(Stores.ROS2_KILTED)
TRAJ_TOPIC = '/joint_trajectory_controller/joint_trajectory'
T0_NS = 1_700_000_000 * 10**9   # the recording's clock: far from zero, like wall/sim time
SCALE = 0.5                      # half-size cameras (160x120) keep rendering cheap


def small_lab_config(scale: float = SCALE) -> LabConfig:
    data = yaml.safe_load(LAB_YAML.read_text())
    for cam in data['cameras'].values():
        cam['width'] = int(cam['width'] * scale)
        cam['height'] = int(cam['height'] * scale)
        for k in ('fx', 'fy', 'cx', 'cy'):
            cam[k] = cam[k] * scale
    return LabConfig.from_dict(data, str(LAB_YAML))


def _header(t_ns: int, frame: str = ''):
    T = TS.types['builtin_interfaces/msg/Time']
    return TS.types['std_msgs/msg/Header'](stamp=T(sec=t_ns // 10**9, nanosec=t_ns % 10**9),
                                           frame_id=frame)


def joint_state_cdr(t_ns: int, names: list[str], q: np.ndarray) -> bytes:
    msg = TS.types['sensor_msgs/msg/JointState'](header=_header(t_ns), name=list(names),
                                                 position=np.asarray(q, float),
                                                 velocity=np.zeros(0), effort=np.zeros(0))
    return bytes(TS.serialize_cdr(msg, 'sensor_msgs/msg/JointState'))


def image_cdr(t_ns: int, rgb: np.ndarray, frame: str) -> bytes:
    h, w = rgb.shape[:2]
    msg = TS.types['sensor_msgs/msg/Image'](header=_header(t_ns, frame), height=h, width=w,
                                            encoding='rgb8', is_bigendian=0, step=w * 3,
                                            data=np.ascontiguousarray(rgb).reshape(-1))
    return bytes(TS.serialize_cdr(msg, 'sensor_msgs/msg/Image'))


def trajectory_cdr(names: list[str], q: np.ndarray, dt: float) -> bytes:
    """What the teleop node sends: header stamp 0 (start on receipt), one point dt ahead."""
    P = TS.types['trajectory_msgs/msg/JointTrajectoryPoint']
    D = TS.types['builtin_interfaces/msg/Duration']
    pt = P(positions=np.asarray(q, float), velocities=np.zeros(0), accelerations=np.zeros(0),
           effort=np.zeros(0), time_from_start=D(sec=0, nanosec=int(dt * 1e9)))
    msg = TS.types['trajectory_msgs/msg/JointTrajectory'](header=_header(0), joint_names=names,
                                                          points=[pt])
    return bytes(TS.serialize_cdr(msg, 'trajectory_msgs/msg/JointTrajectory'))


def record_episode(out_dir: Path, task: str = 'move_card', seed: int = 0,
                   camera_hz: float = 10.0, joint_hz: float = 100.0, settle_s: float = 0.3,
                   max_s: float = 8.0, scale: float = SCALE) -> tuple[Path, TwinScene, dict]:
    """Record one expert episode; returns (episode dir, twin scene, ground truth).

    Ground truth: initial and final object poses in the lab (``objects_start``/``objects_end``).
    """
    cfg = small_lab_config(scale)
    lab = BenchLab(cfg, RealismProfile.load(REALISM_YAML))
    try:
        lab.reset(task, seed)
        state0 = lab.task_state()
        scene = twin_scene_from_truth(lab, cfg, state0)
        cams = lab.camera_names
        topics = [TopicSpec('/joint_states', 'sensor_msgs/msg/JointState', joint_hz),
                  TopicSpec(TRAJ_TOPIC, 'trajectory_msgs/msg/JointTrajectory', 50.0),
                  *[TopicSpec(f'/cameras/{c}/image_raw', 'sensor_msgs/msg/Image', camera_hz)
                    for c in cams]]
        rec = EpisodeRecorder(out_dir, topics, min_free_bytes=0)
        path = rec.start({'task': task, 'seed': seed, 'operator': 'scripted'})
        expert = ScriptedExpert(lab.robot, state0, seed)
        names = list(lab.joint_names)
        dt = lab.timestep
        ctrl_every = round(0.02 / dt)
        js_every = round(1.0 / joint_hz / dt)
        cam_every = round(1.0 / camera_hz / dt)
        latency_ns = 1_000_000   # messages arrive 1 ms after their stamp
        step, last, done_at = 0, None, None
        while step * dt < max_s:
            t_ns = T0_NS + round(lab.time * 1e9)
            if step % ctrl_every == 0 and done_at is None:
                q = expert.command(step * dt, lab.joint_state()[0])
                if q is None:
                    done_at = step
                else:
                    last = q
                    lab.command_positions(q)
                    rec.on_message(TRAJ_TOPIC, trajectory_cdr(names, q, 0.02),
                                   t_ns + latency_ns)
            if step % js_every == 0:
                rec.on_message('/joint_states', joint_state_cdr(t_ns, names, lab.joint_state()[0]),
                               t_ns + latency_ns)
            if step % cam_every == 0:
                for c in cams:
                    rec.on_message(f'/cameras/{c}/image_raw',
                                   image_cdr(t_ns, lab.render(c), f'{c}_optical_frame'),
                                   t_ns + latency_ns)
            if done_at is not None and (step - done_at) * dt >= settle_s:
                break
            lab.step(1)
            step += 1
        rec.stop(success=bool(lab.check_success()[0]))
        truth = {'objects_start': state0['objects'], 'objects_end': lab.task_state()['objects'],
                 'last_command': last, 'success': lab.check_success()[0]}
        return path, scene, truth
    finally:
        lab.close()


def true_cameras(lab: BenchLab) -> dict[str, TwinCamera]:
    """TwinCameras from the bench lab's ground-truth calibration (stand-in for calibration)."""
    out = {}
    for name in lab.camera_names:
        c = lab.camera_info(name)
        out[name] = TwinCamera(name, c.width, c.height, np.asarray(c.K, float),
                               np.asarray(c.D, float), np.asarray(c.T_base_camera, float),
                               f'/cameras/{name}/image_raw')
    return out


def twin_scene_from_truth(lab: BenchLab, cfg: LabConfig, state: dict) -> TwinScene:
    """A twin scene with the lab's true calibration and object poses (tests only)."""
    cameras = true_cameras(lab)
    objects = {}
    for name, o in state['objects'].items():
        oc = lab.objects[name]
        shape = 'bottle' if o.get('neck') else o['shape']
        objects[name] = TwinObject(name, shape, list(o['size']), list(o['color']), list(o['pos']),
                                   list(o['quat']), float(oc.mass), float(oc.friction))
    t = cfg.table
    return TwinScene(table_size=[t.size[0] / 2, t.size[1] / 2], table_center=list(t.center),
                     table_color=list(t.color), cameras=cameras, objects=objects,
                     task=state['task'], provenance={'cameras': 'bench lab truth (test)',
                                                     'objects': 'bench lab truth (test)'})
