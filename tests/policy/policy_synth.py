"""Helpers (no tests): synthetic recorded episodes and tiny policy configs.

Episodes are real rosbag2 directories written by ``EpisodeRecorder`` from rosbags-serialised
CDR (no ROS graph): cameras at 10 Hz showing a square whose position follows joints 1-2,
joint states at 50 Hz following a smooth per-episode trajectory, and one-point
JointTrajectory commands sent just before each frame, due 0.09 s later, whose target is the
trajectory 0.3 s ahead. The reader's "command in force" (the goal being tracked) at frame i is
therefore the one sent just before it: target q(t_i + 0.3 s).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
from rosbags.typesys import Stores, get_typestore

from comsim_core.episodes.topics import TopicSpec
from comsim_policy.config import ModelConfig, PolicyConfig, SchedulerConfig, TrainConfig
from comsim_teleop.recording import EpisodeRecorder

TS = get_typestore(Stores.ROS2_KILTED)
JOINTS = ['joint1', 'joint2', 'joint3', 'joint4', 'joint5', 'joint6', 'gripper']
CMD = '/joint_trajectory_controller/joint_trajectory'
FRONT = '/cameras/front/image_raw'
T0_NS = 1_700_000_000 * 10**9
LEAD_S = 0.3


def _header(t_ns: int, frame: str = ''):
    T = TS.types['builtin_interfaces/msg/Time']
    return TS.types['std_msgs/msg/Header'](stamp=T(sec=t_ns // 10**9, nanosec=t_ns % 10**9),
                                           frame_id=frame)


def joint_state_cdr(t_ns: int, q: np.ndarray, names: list[str] = JOINTS) -> bytes:
    msg = TS.types['sensor_msgs/msg/JointState'](header=_header(t_ns), name=list(names),
                                                 position=np.asarray(q, float),
                                                 velocity=np.zeros(0), effort=np.zeros(0))
    return bytes(TS.serialize_cdr(msg, 'sensor_msgs/msg/JointState'))


def image_cdr(t_ns: int, rgb: np.ndarray) -> bytes:
    h, w = rgb.shape[:2]
    msg = TS.types['sensor_msgs/msg/Image'](header=_header(t_ns, 'cam'), height=h, width=w,
                                            encoding='rgb8', is_bigendian=0, step=w * 3,
                                            data=np.ascontiguousarray(rgb).reshape(-1))
    return bytes(TS.serialize_cdr(msg, 'sensor_msgs/msg/Image'))


def trajectory_cdr(q: np.ndarray, dt: float, names: list[str] = JOINTS) -> bytes:
    P = TS.types['trajectory_msgs/msg/JointTrajectoryPoint']
    D = TS.types['builtin_interfaces/msg/Duration']
    pt = P(positions=np.asarray(q, float), velocities=np.zeros(0), accelerations=np.zeros(0),
           effort=np.zeros(0), time_from_start=D(sec=0, nanosec=int(dt * 1e9)))
    msg = TS.types['trajectory_msgs/msg/JointTrajectory'](header=_header(0),
                                                          joint_names=list(names), points=[pt])
    return bytes(TS.serialize_cdr(msg, 'trajectory_msgs/msg/JointTrajectory'))


def trajectory(seed: int, t: np.ndarray) -> np.ndarray:
    """Smooth joint trajectory (len(t), 7) that differs per seed."""
    rng = np.random.default_rng(seed)
    amp = rng.uniform(0.3, 0.8, 7)
    phase = rng.uniform(0, 2 * np.pi, 7)
    q = amp * np.sin(0.8 * t[:, None] + phase)
    q[:, 6] = 0.02 + 0.015 * np.sin(0.8 * t + phase[6])   # gripper opening in metres
    return q


def render(q: np.ndarray, size: tuple[int, int], cam: int = 0) -> np.ndarray:
    """A square whose centre follows joints 1 and 2 (camera ``cam`` mirrors horizontally)."""
    h, w = size
    img = np.full((h, w, 3), 40, np.uint8)
    img[:, :, 2] = 90
    cx = int((0.5 + 0.35 * q[0]) * w)
    cy = int((0.5 + 0.35 * q[1]) * h)
    if cam:
        cx = w - 1 - cx
    r = max(2, h // 8)
    img[max(0, cy - r):cy + r, max(0, cx - r):cx + r] = (230, 200, 30)
    return img


def write_episode(out_dir: Path, seed: int, n_frames: int = 40, size: tuple[int, int] = (48, 64),
                  cameras: tuple[str, ...] = (FRONT,), source: str | None = None,
                  commands: bool = True, joint_names: list[str] = JOINTS,
                  success: bool = True) -> Path:
    """Record one synthetic episode under ``out_dir``; returns its directory."""
    cam_hz, js_hz = 10.0, 50.0
    topics = [TopicSpec('/joint_states', 'sensor_msgs/msg/JointState', js_hz),
              *[TopicSpec(c, 'sensor_msgs/msg/Image', cam_hz) for c in cameras]]
    if commands:
        topics.append(TopicSpec(CMD, 'trajectory_msgs/msg/JointTrajectory', cam_hz))
    rec = EpisodeRecorder(out_dir, topics, min_free_bytes=0)
    meta = {'task': f'synth{seed}', 'seed': seed}
    if source:
        meta['source'] = source
    path = rec.start(meta)
    n_js = int(n_frames * js_hz / cam_hz)
    t_js = np.arange(n_js) / js_hz
    q_js = trajectory(seed, t_js)
    per = int(js_hz / cam_hz)
    for i in range(n_js):
        t_ns = T0_NS + round(t_js[i] * 1e9)
        rec.on_message('/joint_states', joint_state_cdr(t_ns, q_js[i], joint_names), t_ns + 10**6)
        if i % per == 0:
            if commands:
                ahead = trajectory(seed, np.array([t_js[i] + LEAD_S]))[0]
                rec.on_message(CMD, trajectory_cdr(ahead, 0.09, joint_names), t_ns - 10**6)
            for k, cam in enumerate(cameras):
                rec.on_message(cam, image_cdr(t_ns, render(q_js[i], size, k)), t_ns + 10**6)
    rec.stop(success=success)
    return path


def expected_actions(seed: int, n_frames: int = 40) -> np.ndarray:
    """The command in force at each camera frame: the goal sent just before it."""
    t = np.arange(n_frames) / 10.0
    return trajectory(seed, t + LEAD_S)


def tiny_config(cameras: tuple[str, ...] = (FRONT,), **train) -> PolicyConfig:
    """A policy small enough to train in seconds on two CPU cores."""
    tc = {'batch_size': 16, 'lr': 2e-3, 'max_steps': 200, 'warmup_steps': 10,
          'ema_decay': 0.99, 'ema_warmup_steps': 5, 'val_fraction': 0.0, 'val_every': 100,
          'checkpoint_every': 100, 'log_every': 50, 'cache_dir': '', 'device': 'cpu'}
    tc.update(train)
    return PolicyConfig(camera_topics=list(cameras), image_size=[24, 32], crop_size=[20, 28],
                        n_obs_steps=2, horizon=8, n_action_steps=4,
                        model=ModelConfig(down_dims=[32, 64], kernel_size=3, n_groups=4,
                                          diffusion_step_embed_dim=16, vision_width=4,
                                          num_keypoints=8),
                        scheduler=SchedulerConfig(num_inference_steps=10),
                        train=TrainConfig(**tc))
