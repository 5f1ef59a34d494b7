"""Small sim and paired episodes on disk (recording layout), built from synthetic pairs."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from comsim_core.episodes.sidecar import write_sidecar
from comsim_core.episodes.topics import TopicSpec
from comsim_core.episodes.writer import EpisodeBagWriter, get_distro_typestore
from comsim_neural_sim.data import synthetic_pair
from comsim_twin.generation.writer import GeneratedEpisodeWriter
from comsim_twin.scene import TwinCamera

JOINTS = [f'joint{i}' for i in range(1, 7)] + ['gripper']
CMD = '/joint_trajectory_controller/joint_trajectory'
DT_NS = 10**8


def camera(name: str, h: int, w: int) -> TwinCamera:
    K = np.array([[w, 0, w / 2], [0, w, h / 2], [0, 0, 1]], float)
    return TwinCamera(name, w, h, K, np.zeros(5), np.eye(4))


def sim_episode(out: Path, name: str, frames: int = 6, h: int = 24, w: int = 20, seed: int = 0,
                cameras: tuple[str, ...] = ('front', 'side')) -> Path:
    """A sim episode like comsim_twin.generation writes (two cameras, commands, joint states)."""
    clip = synthetic_pair(frames, h, w, seed=seed)
    cams = {c: camera(c, h, w) for c in cameras}
    wr = GeneratedEpisodeWriter(out, name, cams, JOINTS, (20.0, 10.0, 10.0))
    t0 = 10**9
    for k in range(frames):
        t = t0 + k * DT_NS
        wr.joint_state(t, clip.actions[max(k - 1, 0)], np.zeros(7))
        wr.joint_state(t + DT_NS // 2, clip.actions[k], np.zeros(7))
        wr.command(t, clip.actions[k], 0.0)
        for c in cameras:
            wr.image(t, c, clip.sim[k] if c == 'front' else clip.sim[k, :, ::-1].copy())
    return wr.finish({'task': 'synthetic', 'source': 'sim', 'seed': seed}, True)


def paired_episode(out: Path, name: str, frames: int = 12, h: int = 16, w: int = 16,
                   seed: int = 0, streams: tuple[str, ...] = ('real', 'sim'),
                   cameras: tuple[str, ...] = ('front',)) -> Path:
    """A paired episode like comsim_twin.replay writes (/real and /sim of each camera; every
    camera sees the same synthetic clip)."""
    clip = synthetic_pair(frames, h, w, seed=seed)
    ts = get_distro_typestore('kilted')
    T = ts.types
    specs = [TopicSpec('/joint_states', 'sensor_msgs/msg/JointState', 10.0),
             TopicSpec(CMD, 'trajectory_msgs/msg/JointTrajectory', None)]
    specs += [TopicSpec(f'/{s}/cameras/{c}/image_raw', 'sensor_msgs/msg/Image', 10.0)
              for s in streams for c in cameras]
    path = Path(out) / name
    bag = EpisodeBagWriter(path, specs)
    bag.open()

    def header(t):
        return T['std_msgs/msg/Header'](stamp=T['builtin_interfaces/msg/Time'](
            sec=t // 10**9, nanosec=t % 10**9), frame_id='')
    for k in range(frames):
        t = 10**9 + k * DT_NS
        q = clip.actions[k].astype(np.float64)
        js = T['sensor_msgs/msg/JointState'](header=header(t), name=JOINTS, position=q,
                                             velocity=np.zeros(7), effort=np.zeros(7))
        bag.write('/joint_states', ts.serialize_cdr(js, 'sensor_msgs/msg/JointState'), t)
        pt = T['trajectory_msgs/msg/JointTrajectoryPoint'](
            positions=q, velocities=np.zeros(0), accelerations=np.zeros(0), effort=np.zeros(0),
            time_from_start=T['builtin_interfaces/msg/Duration'](sec=0, nanosec=0))
        jt = T['trajectory_msgs/msg/JointTrajectory'](header=header(t), joint_names=JOINTS,
                                                      points=[pt])
        bag.write(CMD, ts.serialize_cdr(jt, 'trajectory_msgs/msg/JointTrajectory'), t)
        for s in streams:
            rgb = clip.real[k] if s == 'real' else clip.sim[k]
            img = T['sensor_msgs/msg/Image'](header=header(t), height=h, width=w,
                                             encoding='rgb8', is_bigendian=0, step=w * 3,
                                             data=rgb.reshape(-1))
            for c in cameras:
                bag.write(f'/{s}/cameras/{c}/image_raw',
                          ts.serialize_cdr(img, 'sensor_msgs/msg/Image'), t)
    bag.close()
    write_sidecar(path, {'status': 'complete', 'episode': name,
                         'metadata': {'source': 'paired', 'seed': seed}})
    return path
