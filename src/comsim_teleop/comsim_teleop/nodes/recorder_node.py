"""Episode recorder node: configured topics in (serialized), one rosbag2 per episode out.

Episode control by services (`~/start`, `~/stop_success`, `~/stop_failure`, `~/discard`,
`~/rerecord`) or keys in this terminal (s start, y success, n failure, d discard, r re-record).
Metadata comes from parameters, which can be changed between episodes
(`ros2 param set /recorder task stack_blocks`): the typed fields of `EpisodeMeta` (task, seed,
region, variant, source, operator; seed -1 = not recorded) that later stages read, and free-text
`notes` for people. Streams that fall under their expected rate are reported while recording.
Ctrl-C closes the current episode cleanly.

`~/status` (latched JSON) is published on every state change, on a write failure (from the
writer thread, at once: a full disk shows within the second, without any service call) and
every `status_period_s`; the same tick puts per-topic rates and drops on `/diagnostics`.
Each topic's publisher QoS, matched for the subscription, is recorded in the bag
(`offered_qos_profiles`) as `ros2 bag record` does. A topic whose publishers are all transient
local (`/robot_description`, `/tf_static`) is subscribed transient local, and its last message
per publisher starts every episode. A topic entry ending in `optional` is left out, with one
line, where its message package is not installed (tf2_msgs on a pip install).
"""
from __future__ import annotations

import importlib
import json
import sys
import threading
from dataclasses import asdict

import yaml
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import CameraInfo
from std_msgs.msg import String
from std_srvs.srv import Trigger

from comsim_core.episodes.errors import BagWriterError
from comsim_core.episodes.meta import META_FIELDS, UNSET_SEED, EpisodeMeta
from comsim_core.episodes.stats import RATE_WARN_FRACTION
from comsim_core.episodes.topics import TopicSpec, qos_dict
from comsim_core.paths import resolve_config_path
from comsim_core.ros.messages import LATCHED_QOS
from comsim_core.ros.params import Param, declare_parameters
from comsim_core.ros.qos import (
    check_qos_overrides,
    reliability_name,
    subscribe,
    unmatched_publishers,
)
from comsim_core.ros.run import run_node
from comsim_teleop.recording import EpisodeRecorder

DEFAULTS = {
    'output_dir': 'output/episodes',
    'storage': 'mcap',
    'distro': Param('', "bag format (metadata version, ros_distro, message types) of the distro "
                    "that will read the bags; '': $ROS_DISTRO, else kilted",
                    choices=('', 'humble', 'jazzy', 'kilted')),
    'topics': ['/joint_states sensor_msgs/msg/JointState 200'],
    # episode metadata, read when an episode starts (the episode runner sets it per episode)
    'task': Param('', 'task of the next episode', dynamic=True),
    'seed': Param(UNSET_SEED, 'layout seed of the next episode', dynamic=True),
    'region': Param('', 'layout region of the next episode', dynamic=True),
    'variant': Param('', 'object variant of the next episode', dynamic=True),
    'source': Param('real', 'data source written into episode.yaml', dynamic=True),
    'operator': Param('', 'who teleoperates the next episode', dynamic=True),
    'notes': Param('', 'free text stored with the next episode', dynamic=True),
    'lab_config_file': Param('', 'lab description stored with each episode', dynamic=True),
    'min_free_mb': 200,
    'queue_size': 2000,
    'qos_depth': Param(100, 'subscription history depth (reliability follows the publishers; '
                       'qos_overrides.<topic>.subscription.* win over both)', range=(1, 100000)),
    'rate_check_period_s': 2.0,
    'status_period_s': 1.0,
    'keyboard': False,
}


def parse_topic_spec(entry: str) -> tuple[TopicSpec, bool]:
    """'topic type [rate_hz] [optional]' -> (TopicSpec, optional), e.g.
    '/joint_states sensor_msgs/msg/JointState 200', '/tf tf2_msgs/msg/TFMessage optional'."""
    parts = entry.split()
    optional = parts[-1:] == ['optional']
    if optional:
        parts = parts[:-1]
    try:
        if len(parts) not in (2, 3) or parts[1].count('/') != 2:
            raise ValueError
        rate = float(parts[2]) if len(parts) == 3 else None
    except ValueError:
        raise ValueError(f'recorder: topic entry {entry!r} must read "TOPIC PKG/msg/TYPE '
                         f'[RATE_HZ] [optional]"') from None
    return TopicSpec(parts[0], parts[1], rate), optional


def message_class(msgtype: str):
    pkg, _, name = msgtype.split('/')
    try:
        return getattr(importlib.import_module(f'{pkg}.msg'), name)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f'recorder: message type {msgtype!r} is not installed') from exc


class RecorderNode(Node):
    def __init__(self):
        super().__init__('recorder')
        self.p = declare_parameters(self, DEFAULTS)
        self.specs = []
        for spec, optional in (parse_topic_spec(e) for e in self.p.topics):
            try:
                message_class(spec.msgtype)  # fail at start-up on a type that is not installed
            except ValueError as exc:
                if not optional:
                    raise
                self.get_logger().info(f'not recording {spec.name} (optional): {exc}')
                continue
            self.specs.append(spec)
        check_qos_overrides(self, [spec.name for spec in self.specs])
        self.status_pub = self.create_publisher(String, '~/status', LATCHED_QOS)
        self.diag_pub = self.create_publisher(DiagnosticArray, '/diagnostics', 10)
        self.recorder = EpisodeRecorder(self.p.output_dir, self.specs, storage=self.p.storage,
                                        distro=self.p.distro, queue_size=int(self.p.queue_size),
                                        min_free_bytes=int(self.p.min_free_mb) * 1024 * 1024,
                                        on_change=self._publish_status)
        self.calibration: dict[str, dict] = {}
        self.subscribed: dict[str, str] = {}
        self._status_lock = threading.Lock()
        self._subscribe_discovered()
        self.create_timer(0.5, self._subscribe_discovered)
        for name, handler in (('start', self._start), ('stop_success', lambda: self._stop(True)),
                              ('stop_failure', lambda: self._stop(False)),
                              ('discard', self._discard), ('rerecord', self._rerecord)):
            self.create_service(Trigger, f'~/{name}', self._service(handler))
        self.create_timer(float(self.p.rate_check_period_s), self._check_rates)
        self.create_timer(float(self.p.status_period_s), self._tick)
        if self.p.keyboard:
            threading.Thread(target=self._read_keyboard, daemon=True).start()
        self._publish_status()
        self.get_logger().info(f'recorder: {len(self.specs)} topics -> {self.p.output_dir} '
                               f'({self.p.storage})')

    def _subscribe_discovered(self):
        """Subscribe each topic once a publisher appears, with QoS matched to the publishers.

        As rosbag2 does: reliable when every publisher is reliable (large images over UDP lose
        fragments under best effort), best effort otherwise (a reliable subscription would not
        match a best-effort publisher at all). ``qos_overrides.<topic>.subscription.*``
        parameters win over that choice (rosbag2's ``--qos-profile-overrides-path``).
        """
        for spec in self.specs:
            if spec.name in self.subscribed:
                continue
            infos = self.get_publishers_info_by_topic(spec.name)
            if not infos:
                continue
            reliable = all(i.qos_profile.reliability == ReliabilityPolicy.RELIABLE
                           for i in infos)
            latched = all(i.qos_profile.durability == DurabilityPolicy.TRANSIENT_LOCAL
                          for i in infos)
            qos = QoSProfile(depth=int(self.p.qos_depth), history=HistoryPolicy.KEEP_LAST,
                             reliability=ReliabilityPolicy.RELIABLE if reliable
                             else ReliabilityPolicy.BEST_EFFORT,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL if latched
                             else DurabilityPolicy.VOLATILE)
            if latched:
                self.recorder.set_latched(spec.name, keep=len(infos))
            self.recorder.set_offered_qos(spec.name, [qos_dict(i.qos_profile) for i in infos])
            cls = message_class(spec.msgtype)
            sub = subscribe(self, cls, spec.name, self._make_callback(spec.name), qos, raw=True)
            if cls is CameraInfo:
                subscribe(self, CameraInfo, spec.name, self._make_info_cb(spec.name), qos)
            self.subscribed[spec.name] = reliability_name(sub.qos_profile.reliability)
            self.get_logger().info(f'subscribed {spec.name} ({self.subscribed[spec.name]})')
            if unmatched := unmatched_publishers(self, sub):
                self.get_logger().warning(
                    f'{spec.name}: the reliable subscription (qos_overrides) never receives '
                    f'from best-effort publishers {unmatched}')

    def _make_callback(self, topic):
        record = self.recorder.on_message
        clock = self.get_clock()

        def callback(raw: bytes):
            record(topic, raw, clock.now().nanoseconds)
        return callback

    def _make_info_cb(self, topic):
        def callback(msg: CameraInfo):
            if topic not in self.calibration:
                self.calibration[topic] = {
                    'width': msg.width, 'height': msg.height,
                    'distortion_model': msg.distortion_model, 'd': list(msg.d),
                    'k': list(msg.k), 'frame_id': msg.header.frame_id}
        return callback

    # -- episode control ----------------------------------------------------------------------
    def _metadata(self) -> dict:
        params = {name: self.get_parameter(name).value for name in META_FIELDS}
        meta = {**EpisodeMeta.from_params(params, 'recorder parameters').to_dict(),
                'notes': self.get_parameter('notes').value}
        path = self.get_parameter('lab_config_file').value
        if path:
            meta['lab_config'] = yaml.safe_load(resolve_config_path(path).read_text())
        meta['calibration'] = dict(self.calibration)
        return meta

    def _service(self, handler):
        def serve(req, resp):
            try:
                resp.message = handler()
                resp.success = True
            except (BagWriterError, OSError, ValueError) as exc:
                resp.success, resp.message = False, str(exc)
                self.get_logger().error(str(exc))
            self._publish_status()
            return resp
        return serve

    def _start(self) -> str:
        path = self.recorder.start(self._metadata(), self.get_clock().now().nanoseconds)
        self.get_logger().info(f'recording {path}')
        return str(path)

    def _stop(self, success: bool) -> str:
        summary = self.recorder.stop(success)
        self.get_logger().info(f'episode closed: success={success} {summary.path}')
        return json.dumps(summary.to_dict())

    def _discard(self) -> str:
        self.recorder.discard()
        return 'discarded'

    def _rerecord(self) -> str:
        return str(self.recorder.rerecord(self.get_clock().now().nanoseconds))

    def _check_rates(self):
        for warning in self.recorder.rate_warnings(self.get_clock().now().nanoseconds):
            self.get_logger().warning(warning)

    def _status(self) -> dict:
        status = asdict(self.recorder.status())
        status['subscribed'] = dict(self.subscribed)
        status['rates_hz'] = self.recorder.rates(self.get_clock().now().nanoseconds)
        return status

    def _publish_status(self):
        """Publish ``~/status``; called from any thread (executor, writer thread on failure)."""
        if not self.context.ok():
            return
        with self._status_lock:
            self.status_pub.publish(String(data=json.dumps(self._status(), default=str)))

    def _tick(self):
        """Periodic status and ``/diagnostics`` (state, and per topic rate and drops)."""
        self._publish_status()
        status = self._status()
        msg = DiagnosticArray()
        msg.header.stamp = self.get_clock().now().to_msg()
        msg.status = diagnostics(self.get_name(), status, self.specs)
        self.diag_pub.publish(msg)

    def _read_keyboard(self):
        keys = {'s': self._start, 'y': lambda: self._stop(True), 'n': lambda: self._stop(False),
                'd': self._discard, 'r': self._rerecord}
        if not sys.stdin.isatty():
            self.get_logger().error('keyboard control needs a terminal (stdin is not a tty)')
            return
        self.get_logger().info('keys: s start, y stop success, n stop failure, d discard, '
                               'r re-record')
        for line in sys.stdin:
            key = line.strip()[:1]
            if key in keys:
                try:
                    self.get_logger().info(keys[key]())
                except (BagWriterError, OSError) as exc:
                    self.get_logger().error(str(exc))
                self._publish_status()

    def close(self):
        """Ctrl-C: the episode in progress is closed cleanly, marked interrupted."""
        self.recorder.close()


def _kv(**values) -> list[KeyValue]:
    return [KeyValue(key=k, value=str(v)) for k, v in values.items()]


def diagnostics(name: str, status: dict, specs: list[TopicSpec]) -> list[DiagnosticStatus]:
    """One DiagnosticStatus for the recorder, one per topic (rate against expected, drops)."""
    recording = status['state'] == 'recording'
    error = status.get('error')
    top = DiagnosticStatus(
        name=f'{name}: recorder', hardware_id=name,
        level=DiagnosticStatus.ERROR if error else DiagnosticStatus.OK,
        message=f'error: {error}' if error else str(status['state']),
        values=_kv(state=status['state'], episode_dir=status.get('episode_dir') or '',
                   elapsed_s=f"{status['elapsed_s']:.1f}", queue_depth=status['queue_depth'],
                   bytes_written=status['bytes_written'],
                   dropped=sum(status['dropped'].values())))
    out = [top]
    for spec in specs:
        rate = float(status['rates_hz'].get(spec.name, 0.0))
        dropped = int(status['dropped'].get(spec.name, 0))
        expected_hz = spec.expected_rate_hz
        slow = (recording and expected_hz is not None and status['elapsed_s'] > 1.0
                and rate < RATE_WARN_FRACTION * expected_hz)
        level = (DiagnosticStatus.ERROR if error else
                 DiagnosticStatus.WARN if slow or dropped else DiagnosticStatus.OK)
        expected = '' if expected_hz is None else f' (expected {expected_hz:g})'
        message = f'{rate:.1f} Hz{expected}, {dropped} dropped' if recording else 'idle'
        out.append(DiagnosticStatus(
            name=f'{name}: {spec.name}', hardware_id=name, level=level, message=message,
            values=_kv(rate_hz=f'{rate:.2f}', expected_rate_hz=spec.expected_rate_hz or '',
                       written=status['counts'].get(spec.name, 0), dropped=dropped,
                       subscribed=status['subscribed'].get(spec.name, 'no'))))
    return out


def main(args=None):
    return run_node(RecorderNode, args)


if __name__ == '__main__':
    main()
