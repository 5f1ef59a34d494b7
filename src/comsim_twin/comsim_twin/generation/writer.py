"""Write a generated episode in the recording format: rosbag2 + `episode.yaml` sidecar.

Same topics, types and sidecar layout as `comsim_teleop.recording` produces from the lab, so
every later stage reads sim and real episodes with one `Episode` reader. Messages are built and
serialised with rosbags' typestore (no rclpy). The bag is written into a hidden partial
directory and moved into place only when complete, so an interrupted episode never looks done.
"""
from __future__ import annotations

import shutil
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from comsim_core.episodes.encode import rgb8_image_cdr
from comsim_core.episodes.layout import PARTIAL_DIR
from comsim_core.episodes.publish import publish_episode
from comsim_core.episodes.topics import TopicSpec
from comsim_core.episodes.writer import EpisodeBagWriter, get_distro_typestore
from comsim_twin.scene import TwinCamera

JOINT_STATES = '/joint_states'
COMMANDS = '/joint_trajectory_controller/joint_trajectory'
T0_NS = 10**9      # stamps start at 1 s of sim time (0 would read as "no stamp")


def image_topic(cam: TwinCamera) -> str:
    return cam.topic or f'/cameras/{cam.name}/image_raw'


def info_topic(cam: TwinCamera) -> str:
    return image_topic(cam).rsplit('/', 1)[0] + '/camera_info'


def topic_specs(cameras: dict[str, TwinCamera], joint_hz: float, camera_hz: float,
                control_hz: float) -> list[TopicSpec]:
    specs = [TopicSpec(JOINT_STATES, 'sensor_msgs/msg/JointState', joint_hz)]
    for cam in cameras.values():
        specs += [TopicSpec(image_topic(cam), 'sensor_msgs/msg/Image', camera_hz),
                  TopicSpec(info_topic(cam), 'sensor_msgs/msg/CameraInfo', camera_hz)]
    specs.append(TopicSpec(COMMANDS, 'trajectory_msgs/msg/JointTrajectory', control_hz))
    return specs


class GeneratedEpisodeWriter:
    """Collects one episode's messages; `finish` moves it into `out_dir/<name>` atomically."""

    def __init__(self, out_dir: Path, name: str, cameras: dict[str, TwinCamera],
                 joint_names: list[str], rates: tuple[float, float, float],
                 storage: str = 'mcap', distro: str = 'kilted'):
        self.out_dir, self.name = Path(out_dir), name
        self.final = self.out_dir / name
        self.partial = self.out_dir / PARTIAL_DIR / name
        if self.partial.exists():
            shutil.rmtree(self.partial)
        self.partial.parent.mkdir(parents=True, exist_ok=True)
        self.ts = get_distro_typestore(distro)
        self.cameras, self.joint_names = cameras, list(joint_names)
        self.specs = topic_specs(cameras, *rates)
        self.storage, self.distro = storage, distro
        self.bag = EpisodeBagWriter(self.partial, self.specs, storage=storage, distro=distro)
        self.bag.open()
        self.times: dict[str, list[int]] = {s.name: [] for s in self.specs}
        self.started_at = _now_iso()
        T = self.ts.types
        self._Time, self._Header = T['builtin_interfaces/msg/Time'], T['std_msgs/msg/Header']
        self._info = {n: self._camera_info(c) for n, c in cameras.items()}

    # -- messages ------------------------------------------------------------------------------
    def _header(self, t_ns: int, frame: str = ''):
        return self._Header(stamp=self._Time(sec=t_ns // 10**9, nanosec=t_ns % 10**9),
                            frame_id=frame)

    def _camera_info(self, cam: TwinCamera) -> dict[str, Any]:
        K = np.asarray(cam.K, float).reshape(3, 3)
        P = np.hstack([K, np.zeros((3, 1))])
        return {'height': int(cam.height), 'width': int(cam.width),
                'distortion_model': 'plumb_bob', 'd': np.asarray(cam.D, float).reshape(-1),
                'k': K.reshape(-1), 'r': np.eye(3).reshape(-1), 'p': P.reshape(-1)}

    def _write(self, topic: str, msgtype: str, msg, t_ns: int) -> None:
        self._write_raw(topic, bytes(self.ts.serialize_cdr(msg, msgtype)), t_ns)

    def _write_raw(self, topic: str, raw: bytes, t_ns: int) -> None:
        self.bag.write(topic, raw, t_ns)
        self.times[topic].append(t_ns)

    def joint_state(self, t_ns: int, q: np.ndarray, dq: np.ndarray) -> None:
        msg = self.ts.types['sensor_msgs/msg/JointState'](
            header=self._header(t_ns), name=self.joint_names,
            position=np.asarray(q, np.float64), velocity=np.asarray(dq, np.float64),
            effort=np.zeros(len(self.joint_names)))
        self._write(JOINT_STATES, 'sensor_msgs/msg/JointState', msg, t_ns)

    def command(self, t_ns: int, q: np.ndarray, dt: float) -> None:
        """One-point JointTrajectory due `dt` after its stamp (0: the twin applies it at once,
        so a reader's JTC-style merge keeps every command)."""
        T = self.ts.types
        point = T['trajectory_msgs/msg/JointTrajectoryPoint'](
            positions=np.asarray(q, np.float64), velocities=np.zeros(0),
            accelerations=np.zeros(0), effort=np.zeros(0),
            time_from_start=T['builtin_interfaces/msg/Duration'](
                sec=int(dt), nanosec=int(round((dt % 1) * 1e9))))
        msg = T['trajectory_msgs/msg/JointTrajectory'](
            header=self._header(t_ns), joint_names=self.joint_names, points=[point])
        self._write(COMMANDS, 'trajectory_msgs/msg/JointTrajectory', msg, t_ns)

    def image(self, t_ns: int, camera: str, rgb: np.ndarray) -> None:
        cam = self.cameras[camera]
        self._write_raw(image_topic(cam), rgb8_image_cdr(rgb, t_ns, f'{camera}_optical_frame'),
                        t_ns)
        T = self.ts.types
        info = T['sensor_msgs/msg/CameraInfo'](
            header=self._header(t_ns, f'{camera}_optical_frame'), **self._info[camera],
            binning_x=0, binning_y=0,
            roi=T['sensor_msgs/msg/RegionOfInterest'](x_offset=0, y_offset=0, height=0, width=0,
                                                      do_rectify=False))
        self._write(info_topic(cam), 'sensor_msgs/msg/CameraInfo', info, t_ns)

    # -- finishing -----------------------------------------------------------------------------
    def finish(self, metadata: dict[str, Any], success: bool, notes: str = '') -> Path:
        return publish_episode(self.bag, self.specs, self.times, self.partial, self.final,
                               name=self.name, started_at=self.started_at,
                               stopped_at=_now_iso(), storage=self.storage, distro=self.distro,
                               metadata=metadata, success=success, notes=notes)

    def abort(self) -> None:
        """Drop the partial episode (discarded failure or error)."""
        self.bag.abort()
        shutil.rmtree(self.partial, ignore_errors=True)


def _now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec='milliseconds')
