"""An in-process rollout saved in the recording format (rosbag2 + `episode.yaml`), no rclpy.

What the policy saw and did: joint states at every control tick, the camera frames it observed
(only those are rendered) and every command sent to the arm as a JointTrajectory (chunks with
their due times, holds as one point), so the same `Episode` reader and contact sheets work on
evaluation episodes from either mode. Written into a hidden partial directory and moved into
place when complete.
"""
from __future__ import annotations

import shutil
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from comsim_core.episodes.encode import rgb8_image_cdr
from comsim_core.episodes.layout import PARTIAL_DIR
from comsim_core.episodes.meta import EpisodeMeta
from comsim_core.episodes.publish import publish_episode
from comsim_core.episodes.topics import TopicSpec
from comsim_core.episodes.writer import EpisodeBagWriter, get_distro_typestore

JOINT_STATES = '/joint_states'
COMMANDS = '/joint_trajectory_controller/joint_trajectory'
T0_NS = 10**9   # stamps start at 1 s (0 reads as "no stamp")


def _ns(t: float) -> int:
    return T0_NS + int(round(t * 1e9))


class RolloutEpisodeWriter:
    def __init__(self, out_dir: Path, name: str, joint_names: list[str], cameras: list[str],
                 control_hz: float, distro: str = 'kilted'):
        self.final = Path(out_dir) / name
        self.partial = Path(out_dir) / PARTIAL_DIR / name
        if self.partial.exists():
            shutil.rmtree(self.partial)
        self.partial.parent.mkdir(parents=True, exist_ok=True)
        self.name, self.distro = name, distro
        self.ts = get_distro_typestore(distro)
        self.joint_names = list(joint_names)
        self.specs = [TopicSpec(JOINT_STATES, 'sensor_msgs/msg/JointState', control_hz),
                      *(TopicSpec(c, 'sensor_msgs/msg/Image', None) for c in cameras),
                      TopicSpec(COMMANDS, 'trajectory_msgs/msg/JointTrajectory', None)]
        self.bag = EpisodeBagWriter(self.partial, self.specs, storage='mcap', distro=distro)
        self.bag.open()
        self.times: dict[str, list[int]] = {s.name: [] for s in self.specs}
        self.started_at = _now_iso()

    def _header(self, t_ns: int, frame: str = ''):
        T = self.ts.types
        return T['std_msgs/msg/Header'](
            stamp=T['builtin_interfaces/msg/Time'](sec=t_ns // 10**9, nanosec=t_ns % 10**9),
            frame_id=frame)

    def _write(self, topic: str, raw: bytes, t_ns: int) -> None:
        self.bag.write(topic, raw, t_ns)
        self.times[topic].append(t_ns)

    def joint_state(self, t: float, q: np.ndarray, dq: np.ndarray) -> None:
        t_ns = _ns(t)
        msg = self.ts.types['sensor_msgs/msg/JointState'](
            header=self._header(t_ns), name=self.joint_names,
            position=np.asarray(q, np.float64), velocity=np.asarray(dq, np.float64),
            effort=np.zeros(len(self.joint_names)))
        self._write(JOINT_STATES, bytes(self.ts.serialize_cdr(msg, 'sensor_msgs/msg/JointState')),
                    t_ns)

    def image(self, t: float, topic: str, rgb: np.ndarray) -> None:
        frame = topic.strip('/').split('/')[1] if topic.count('/') > 2 else topic.strip('/')
        self._write(topic, rgb8_image_cdr(rgb, _ns(t), f'{frame}_optical_frame'), _ns(t))

    def command(self, t: float, stamp: float, targets: np.ndarray, offsets: np.ndarray) -> None:
        """A trajectory received at `t`: point i due `offsets[i]` after `stamp`."""
        T = self.ts.types
        points = [T['trajectory_msgs/msg/JointTrajectoryPoint'](
            positions=np.asarray(q, np.float64), velocities=np.zeros(0),
            accelerations=np.zeros(0), effort=np.zeros(0),
            time_from_start=T['builtin_interfaces/msg/Duration'](
                sec=int(dt // 1), nanosec=int(round((dt % 1) * 1e9)) % 10**9))
            for q, dt in zip(targets, offsets)]
        msg = T['trajectory_msgs/msg/JointTrajectory'](
            header=self._header(_ns(stamp)), joint_names=self.joint_names, points=points)
        self._write(COMMANDS, bytes(self.ts.serialize_cdr(
            msg, 'trajectory_msgs/msg/JointTrajectory')), _ns(t))

    def finish(self, meta: EpisodeMeta, success: bool, notes: str = '') -> Path:
        metadata: dict[str, Any] = meta.to_dict()
        return publish_episode(self.bag, self.specs, self.times, self.partial, self.final,
                               name=self.name, started_at=self.started_at,
                               stopped_at=_now_iso(), storage='mcap', distro=self.distro,
                               metadata=metadata, success=success, notes=notes)

    def abort(self) -> None:
        self.bag.abort()
        shutil.rmtree(self.partial, ignore_errors=True)


def _now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec='seconds')
