"""Twin node: the digital twin's cameras as ROS topics.

``mode: replay`` replays a recorded episode (param ``bag``) in the twin and publishes each twin
render with the recorded frame's stamp (the real episode's time base); ``mode: mirror`` follows
the live ``/joint_states`` (objects follow physics). Renders go out as sensor_msgs/Image on
``<topic_prefix>/<cam>/image_raw`` with the twin camera's calibration on ``camera_info``, at
``rate_hz``. All twin work happens in the timer callback on the spinning thread, which owns the
MuJoCo GL context; the logic lives in ``comsim_twin.replay`` (no ROS there).
"""
from __future__ import annotations

from builtin_interfaces.msg import Time
from rclpy.node import Node
from sensor_msgs.msg import CameraInfo, Image, JointState

from comsim_core.episodes import Episode
from comsim_core.paths import resolve_config_path
from comsim_core.ros.messages import IMAGE_QOS, SENSOR_QOS, camera_info_msg, image_msg
from comsim_core.ros.params import ParameterConfigError, declare_parameters
from comsim_core.ros.run import run_node
from comsim_twin.backends import make_backend
from comsim_twin.replay.mirror import JointMirror
from comsim_twin.replay.replay import MODES, EpisodeReplay
from comsim_twin.scene import TwinScene

DEFAULTS = {
    'mode': 'replay',                  # replay | mirror
    'bag': '',                         # recorded episode directory (mode replay)
    'scene': 'output/twin/twin_scene.yaml',
    'backend': 'mujoco',
    'replay_mode': 'kinematic',        # kinematic | dynamic
    'loop': False,                     # start the bag again when it ends
    'rate_hz': 10.0,
    'joint_states_topic': '/joint_states',
    'topic_prefix': '/twin/cameras',
}
NODE_MODES = ('replay', 'mirror')


class TwinNode(Node):
    def __init__(self):
        super().__init__('twin')
        self.p = declare_parameters(self, DEFAULTS)
        if self.p.mode not in NODE_MODES:
            raise ParameterConfigError(
                f'twin: mode {self.p.mode!r} unknown; choose one of {NODE_MODES}')
        if self.p.replay_mode not in MODES:
            raise ParameterConfigError(
                f'twin: replay_mode {self.p.replay_mode!r} unknown; one of {MODES}')
        if self.p.mode == 'replay' and not self.p.bag:
            raise ParameterConfigError(
                'twin: mode replay needs the parameter bag (an episode directory)')
        if self.p.rate_hz <= 0:
            raise ParameterConfigError(f'twin: rate_hz must be > 0, got {self.p.rate_hz}')
        self.scene = TwinScene.load(resolve_config_path(self.p.scene))
        self.backend = make_backend(self.p.backend)
        self.episode: Episode | None = None
        self.events = None
        self.mirror: JointMirror | None = None
        if self.p.mode == 'replay':
            self._start_replay()   # builds the scene
        else:
            self.backend.build(self.scene)
            self.mirror = JointMirror(self.backend)
            self.create_subscription(JointState, self.p.joint_states_topic, self._on_joints,
                                     SENSOR_QOS)
        self.pubs = {}
        for cam in self.backend.camera_names:
            base = f'{self.p.topic_prefix}/{cam}'
            self.pubs[cam] = (self.create_publisher(Image, f'{base}/image_raw', IMAGE_QOS),
                              self.create_publisher(CameraInfo, f'{base}/camera_info', IMAGE_QOS))
        self.published = 0
        self.timer = self.create_timer(1.0 / self.p.rate_hz, self._tick)
        self.get_logger().info(f'twin {self.p.mode} ({self.p.bag or self.p.joint_states_topic}) '
                               f'-> {self.p.topic_prefix}/<cam>/image_raw at {self.p.rate_hz} Hz')

    # -- sources ------------------------------------------------------------------------------
    def _start_replay(self) -> None:
        if self.episode is not None:
            self.episode.close()
        self.backend.build(self.scene)
        self.episode = Episode.open(resolve_config_path(self.p.bag))
        replay = EpisodeReplay(self.episode, self.scene, self.backend, self.p.replay_mode,
                               self.p.joint_states_topic)
        self.events = replay.events()

    def _on_joints(self, msg: JointState) -> None:
        stamp = msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec
        try:
            self.mirror.update(list(msg.name), list(msg.position), stamp)
        except ValueError as exc:
            self.get_logger().error(str(exc), throttle_duration_sec=2.0)

    # -- output -------------------------------------------------------------------------------
    def _tick(self) -> None:
        if self.mirror is not None:
            frames = self.mirror.tick(1.0 / self.p.rate_hz)
            if frames is not None:
                self._publish(frames, self.mirror.stamp_ns or self.get_clock().now().nanoseconds)
            return
        frames, stamp = self._next_replay_frame()
        if frames:
            self._publish(frames, stamp)

    def _next_replay_frame(self) -> tuple[dict, int]:
        """Renders of every camera at the next recorded frame time (one per tick)."""
        frames: dict = {}
        stamp = 0
        while self.events is not None and len(frames) < len(self.pubs):
            ev = next(self.events, None)
            if ev is None:
                if self.p.loop:
                    self._start_replay()
                    continue
                self.get_logger().info(f'replay of {self.p.bag} finished '
                                       f'({self.published} frames published)')
                self.events = None
                break
            if ev.kind == 'image':
                frames[ev.camera] = ev.sim_image
                stamp = ev.stamp_ns
        return frames, stamp

    def _publish(self, frames: dict, stamp_ns: int) -> None:
        stamp = Time(sec=stamp_ns // 10**9, nanosec=stamp_ns % 10**9)  # exact, no float
        for cam, rgb in frames.items():
            image_pub, info_pub = self.pubs[cam]
            c = self.scene.cameras[cam]
            frame_id = f'{cam}_optical_frame'
            image, info = (image_msg(rgb, 0.0, frame_id),
                           camera_info_msg(c.width, c.height, c.K, c.D, 0.0, frame_id))
            image.header.stamp = info.header.stamp = stamp
            image_pub.publish(image)
            info_pub.publish(info)
        self.published += 1

    def close(self) -> None:
        if self.events is not None:   # stops the replay's helper thread before its bag closes
            self.events.close()
            self.events = None
        if self.episode is not None:
            self.episode.close()
        self.backend.close()


def main(args=None):
    return run_node(TwinNode, args)


if __name__ == '__main__':
    main()
