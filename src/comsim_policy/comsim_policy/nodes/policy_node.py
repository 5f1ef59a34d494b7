"""Policy node: cameras and joint states in, action chunks out, behind a safety layer.

Loads a checkpoint (`PolicyRunner`), checks it against the robot it finds (joint names from
`/joint_states`, camera topics and image sizes from the first images) and refuses to start on a
mismatch. Every control decision is `comsim_policy.controller.PolicyController`'s: this node
fills its observations from the subscriptions, calls `update` on a timer, runs its predictions
in a worker thread, and sends what it returns through one `_publish` (a chunk as one
`JointTrajectory` stamped with the observation time, forward position steps, or holds).

Safety (`comsim_policy.safety`): stale observations, non-finite joint states and non-finite
outputs hold position (a non-finite joint state is dropped: holds use the last finite one, and
no command with a non-finite value is ever published); the e-stop (`~/estop`) latches until
`~/reset_estop`; `dry_run` sends nothing to the arm and publishes what it would send on
`~/dry_run_commands`; every target is clamped to joint and velocity limits. State, hold reason,
inference latency, achieved rates and counts of discarded, clamped and withheld commands go to
/diagnostics.

Inputs on a real lab: ``image_transport: compressed`` subscribes to ``<camera>/compressed``
(sensor_msgs/CompressedImage, JPEG or PNG) instead of raw Images; either is decoded by
``comsim_core.episodes.images.decode_rgb``, the decoder training read the episodes with. Every
subscription's reliability, history and depth follow ``qos_overrides.<topic>.subscription.*``
(``comsim_core.ros.qos``): a best-effort camera driver needs ``reliability: best_effort``, and
the start-up error says so when such publishers are seen. ``gripper_output: forward_topic``
takes the gripper joint out of the arm's command and sends it alone on ``gripper_topic`` (a
Float64MultiArray, as ros2_control's forward command controller takes it), each chunk's
gripper target when it falls due.
"""
from __future__ import annotations

import json
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from sensor_msgs.msg import CompressedImage, Image, JointState
from std_msgs.msg import Float64MultiArray, String
from std_srvs.srv import SetBool, Trigger
from trajectory_msgs.msg import JointTrajectory

from comsim_core.episodes.errors import EpisodeError
from comsim_core.episodes.images import decode_rgb
from comsim_core.ros.messages import (
    COMMAND_QOS,
    IMAGE_QOS,
    LATCHED_QOS,
    SENSOR_QOS,
    chunk_trajectory_msg,
    time_to_sec,
    trajectory_msg,
)
from comsim_core.ros.params import Param, declare_parameters
from comsim_core.ros.qos import best_effort_hint, check_qos_overrides, subscribe
from comsim_core.ros.run import NodeStartupError, run_node
from comsim_policy.controller import (
    OUTPUTS,
    Command,
    ControllerSetupError,
    Hold,
    Notice,
    Output,
    build_controller,
    load_runner_class,
)
from comsim_policy.safety import HoldReason, State

IMAGE_TRANSPORTS = ('raw', 'compressed')
GRIPPER_OUTPUTS = ('none', 'forward_topic')

DEFAULTS = {
    'checkpoint': Param('', 'checkpoint directory (config.yaml + model.safetensors)'),
    'device': Param('', "torch device; '' = the runner's choice (cuda when present, else cpu)"),
    'runner_class': Param('comsim_policy.inference:PolicyRunner',
                          'module:Class that loads the checkpoint and predicts chunks'),
    'robot_model': Param('', "robot model giving joint and velocity limits; '' = the ComSim "
                         'arm'),
    'output': Param('trajectory', 'trajectory: one JointTrajectory per chunk; forward: one '
                    'Float64MultiArray per control period', choices=OUTPUTS),
    # Topic names are relative, as a ROS driver's are: a namespace and remappings
    # (`-r joint_states:=/arm1/joint_states`) apply to them.
    'trajectory_topic': Param('joint_trajectory_controller/joint_trajectory',
                              'where output=trajectory sends chunks (relative: under the '
                              'namespace; remappable)'),
    'forward_topic': Param('forward_position_controller/commands',
                           'where output=forward sends positions (relative: under the '
                           'namespace; remappable)'),
    'joint_states_topic': Param('joint_states', "the arm driver's sensor_msgs/JointState "
                                '(relative: under the namespace; remappable)'),
    'image_transport': Param('raw', "raw: sensor_msgs/Image on each camera topic; compressed: "
                             'sensor_msgs/CompressedImage (JPEG/PNG) on <camera topic>/compressed, '
                             "as image_transport's compressed plugin publishes it",
                             choices=IMAGE_TRANSPORTS),
    'gripper_output': Param('none', 'none: the gripper joint is one more joint of the arm '
                            "command; forward_topic: it leaves the arm's command and goes alone "
                            'on gripper_topic (std_msgs/Float64MultiArray, one value, as '
                            "ros2_control's forward command controller takes it)",
                            choices=GRIPPER_OUTPUTS),
    'gripper_topic': Param('gripper_controller/commands', 'where gripper_output=forward_topic '
                           'sends the gripper command (relative: under the namespace; '
                           'remappable)'),
    'gripper_joint': Param('gripper', "the checkpoint's joint that gripper_output=forward_topic "
                           'sends on its own'),
    'inference_rate_hz': Param(0.0, '0 = ask for the next chunk just in time; > 0 = at this '
                               'fixed rate', range=(0.0, 100.0)),
    'inference_timeout_s': Param(2.0, 'a prediction out longer than this holds the arm until '
                                 'a chunk comes (0 = never)', range=(0.0, 60.0)),
    'stale_after_s': Param(0.5, 'an image or joint state older than this holds the arm',
                           range=(0.01, 10.0)),
    'velocity_scale': Param(1.0, "fraction of the robot model's joint velocity limits",
                            range=(0.01, 1.0)),
    'dry_run': Param(False, 'send nothing to the arm; publish the commands on '
                     '~/dry_run_commands'),
    'start_enabled': Param(False, 'move as soon as the robot matches the checkpoint (else '
                           'call ~/enable)'),
    'startup_timeout_s': Param(60.0, 'wall seconds to wait for joint states and every camera',
                               range=(1.0, 3600.0)),
    'diagnostics_period_s': Param(1.0, 'wall seconds between /diagnostics messages',
                                  range=(0.05, 60.0)),
}


class PolicyStartupError(NodeStartupError):
    """The node cannot run this checkpoint on this robot (mismatch, missing topics)."""


class PolicyNode(Node):
    def __init__(self):
        super().__init__('policy')
        self.p = declare_parameters(self, DEFAULTS)
        if not self.p.checkpoint:
            raise PolicyStartupError('policy: parameter checkpoint is empty (a checkpoint dir)')
        try:
            runner_cls = load_runner_class(self.p.runner_class)
        except ControllerSetupError as exc:
            raise PolicyStartupError(f'policy: {exc}') from exc
        self.mismatch_error = getattr(sys.modules[runner_cls.__module__],
                                      'PolicyMismatchError', ValueError)
        try:
            runner = runner_cls.load(self.p.checkpoint, device=self.p.device or None)
        except Exception as exc:  # missing files, bad config, weights that do not fit
            raise PolicyStartupError(f'cannot load checkpoint {self.p.checkpoint!r}: {exc}') \
                from exc
        cfg = runner.config
        self.joint_names = list(cfg.joint_names)
        self.cameras = list(cfg.camera_topics)
        self.period = 1.0 / float(cfg.control_hz)
        try:
            self.ctl = build_controller(
                runner, robot_model=self.p.robot_model, velocity_scale=self.p.velocity_scale,
                stale_after_s=self.p.stale_after_s,
                inference_rate_hz=self.p.inference_rate_hz, output=self.p.output,
                inference_timeout_s=self.p.inference_timeout_s)
        except ControllerSetupError as exc:
            raise PolicyStartupError(f'policy: {exc}') from exc
        try:
            self.ctl.warm_up()
        except Exception as exc:  # weights that load but cannot run (shapes, dtypes)
            raise PolicyStartupError(f'checkpoint {self.p.checkpoint!r} cannot predict on '
                                     f'its own input shapes: {exc}') from exc
        self.lock = threading.RLock()
        self.worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix='policy_infer')
        self.js_names: list[str] | None = None
        self.sizes: dict[str, tuple[int, int]] = {}
        self.startup_error: Exception | None = None
        self.t_start = time.monotonic()
        self.published_status: tuple | None = None

        # Every subscription's history, depth and reliability can be overridden
        # (qos_overrides.<topic>.subscription.reliability: best_effort for such a camera).
        compressed = self.p.image_transport == 'compressed'
        image_type = CompressedImage if compressed else Image
        self.image_topics = {c: f'{c}/compressed' if compressed else c for c in self.cameras}
        check_qos_overrides(self, [self.p.joint_states_topic, *self.image_topics.values()])
        self.js_sub = subscribe(self, JointState, self.p.joint_states_topic,
                                self._on_joint_state, SENSOR_QOS)
        self.image_subs = {c: subscribe(self, image_type, t, self._image_cb(c), IMAGE_QOS)
                           for c, t in self.image_topics.items()}
        self.arm_index, self.gripper_index = self._split_gripper()
        self.gripper_due: list[tuple[float, float]] = []   # (time due, gripper target)
        self.gripper_pub = None
        if self.p.gripper_output == 'forward_topic':
            self.gripper_pub = self.create_publisher(
                Float64MultiArray, '~/dry_run_gripper_commands' if self.p.dry_run
                else self.p.gripper_topic, COMMAND_QOS)
        if self.p.dry_run:
            out_topic = '~/dry_run_commands'
        else:
            out_topic = self.p.trajectory_topic if self.p.output == 'trajectory' \
                else self.p.forward_topic
        msg_type = JointTrajectory if self.p.output == 'trajectory' else Float64MultiArray
        self.out_pub = self.create_publisher(msg_type, out_topic, COMMAND_QOS)
        self.status_pub = self.create_publisher(String, '~/status', LATCHED_QOS)
        self.diag_pub = self.create_publisher(DiagnosticArray, '/diagnostics', 10)
        self.create_service(SetBool, '~/enable', self._on_enable)
        self.create_service(Trigger, '~/estop', self._on_estop)
        self.create_service(Trigger, '~/reset_estop', self._on_reset_estop)
        self.create_timer(self.period / 4, self._tick)
        steady = Clock(clock_type=ClockType.STEADY_TIME)
        self.create_timer(float(self.p.diagnostics_period_s), self._publish_diagnostics,
                          clock=steady)
        self.create_timer(0.5, self._check_startup, clock=steady)
        self._publish_status()
        self.get_logger().info(
            f'policy: {self.p.checkpoint} on {len(self.joint_names)} joints, cameras '
            f'{self.cameras} ({self.p.image_transport}), {cfg.control_hz:g} Hz, '
            f'output={self.p.output} -> {self.out_pub.topic_name}'
            + (f', gripper -> {self.gripper_pub.topic_name}' if self.gripper_pub else '')
            + (' (DRY RUN)' if self.p.dry_run else ''))

    def _split_gripper(self) -> tuple[list[int], int | None]:
        """Columns of the arm's command and the gripper's (None: the gripper stays in the
        arm's command)."""
        everything = list(range(len(self.joint_names)))
        if self.p.gripper_output == 'none':
            return everything, None
        if self.p.gripper_joint not in self.joint_names:
            raise PolicyStartupError(
                f'policy: gripper_joint {self.p.gripper_joint!r} is not a joint of checkpoint '
                f'{self.p.checkpoint} (its joints: {self.joint_names}); gripper_output='
                f'{self.p.gripper_output} needs it')
        g = self.joint_names.index(self.p.gripper_joint)
        return [i for i in everything if i != g], g

    def _now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    # -- inputs -------------------------------------------------------------------------------
    def _on_joint_state(self, msg: JointState):
        names = list(msg.name)
        if self.js_names is None:
            self.js_names = names
            self._check_compatible()
        index = {n: i for i, n in enumerate(names)}
        try:
            q = np.array([msg.position[index[n]] for n in self.joint_names])
        except (KeyError, IndexError):
            return  # reported by the compatibility check
        with self.lock:
            self.ctl.observe_joint_state(self._now(), time_to_sec(msg.header.stamp), q)

    def _image_cb(self, topic):
        """Images of camera ``topic`` (the checkpoint's name for it; raw or compressed)."""
        where = self.image_topics[topic]

        def callback(msg: Image | CompressedImage):
            try:
                rgb = decode_rgb(msg, where)
            except EpisodeError as exc:  # an encoding, size or format the node cannot read
                self.get_logger().error(str(exc), throttle_duration_sec=5.0)
                return
            if topic not in self.sizes:
                self.sizes[topic] = rgb.shape[:2]
                self._check_compatible()
            with self.lock:
                self.ctl.observe_image(topic, time_to_sec(msg.header.stamp), rgb)
        return callback

    def _check_compatible(self):
        """Once joint names and every camera's size are known: the checkpoint must match."""
        if self.ctl.checked or self.js_names is None or set(self.sizes) != set(self.cameras):
            return
        try:
            with self.lock:
                self.ctl.check_robot(self.js_names, dict(self.sizes))
        except self.mismatch_error as exc:
            self._fail(PolicyStartupError(f'checkpoint {self.p.checkpoint} does not match this '
                                          f'robot: {exc}'))
            return
        self.get_logger().info('checkpoint matches the robot (joints, cameras, image sizes)')
        if self.p.start_enabled:
            self._set_enabled(True)
        self._publish_status()

    def _check_startup(self):
        if self.ctl.checked or self.startup_error:
            return
        if time.monotonic() - self.t_start > float(self.p.startup_timeout_s):
            images = sorted(t for t, types in self.get_topic_names_and_types()
                            if {'sensor_msgs/msg/Image', 'sensor_msgs/msg/CompressedImage'}
                            & set(types))
            missing_subs = [s for c, s in self.image_subs.items() if c not in self.sizes]
            if self.js_names is None:
                missing_subs.append(self.js_sub)
            missing = [s.topic_name for s in missing_subs]   # resolved: namespace, remaps
            hints = [h for h in (best_effort_hint(self, s) for s in missing_subs) if h]
            self._fail(PolicyStartupError(
                f'no data on {missing} after {self.p.startup_timeout_s:g} s; '
                f'image topics seen: {images}' + ''.join(f'; {h}' for h in hints)))

    def _fail(self, exc: Exception):
        """Fatal at start-up: never move, say why everywhere, and stop the node."""
        self.startup_error = exc
        with self.lock:
            self.ctl.lock_out()
        self.get_logger().fatal(str(exc))
        self._publish_status()
        self._publish_diagnostics()
        raise exc

    # -- services -----------------------------------------------------------------------------
    def _set_enabled(self, on: bool) -> tuple[bool, str]:
        with self.lock:
            ok, why, out = self.ctl.set_enabled(on)
            self._publish(out)
        self._publish_status()
        return ok, why

    def _on_enable(self, req, resp):
        resp.success, resp.message = self._set_enabled(req.data)
        return resp

    def _on_estop(self, req, resp):
        with self.lock:
            self._publish(self.ctl.estop())
        self.get_logger().warning('E-STOP: holding position until ~/reset_estop and ~/enable')
        self._publish_status()
        resp.success, resp.message = True, 'e-stop latched'
        return resp

    def _on_reset_estop(self, req, resp):
        with self.lock:
            self.ctl.reset_estop()
        self._publish_status()
        resp.success, resp.message = True, 'e-stop cleared; call ~/enable to move'
        return resp

    # -- the loop -----------------------------------------------------------------------------
    def _tick(self):
        now = self._now()
        with self.lock:
            self._publish(self.ctl.update(now))
            if self.gripper_due:
                self._send_gripper(now)
            request = self.ctl.request(now)
            if request is not None:
                future = self.worker.submit(self.ctl.predict, request)
                future.add_done_callback(self._on_prediction)
            self._sync_status()

    def _on_prediction(self, future):
        """In the worker thread: the controller checks, times and shapes the chunk."""
        if future.cancelled():  # shutting down
            return
        with self.lock:
            # Scheduling runs on the node's clock (sim time under use_sim_time), so does this.
            self._publish(self.ctl.accept(future.result(), self._now()))
            self._sync_status()

    def _publish(self, out: Output):
        """The one way out to the arm: a chunk as a trajectory, a forward step, or a hold
        (one point now, or one forward command); a notice is only logged."""
        if out is None:
            return
        if isinstance(out, Notice):
            if out.error:
                self.get_logger().error(out.text, throttle_duration_sec=5.0)
            else:
                self.get_logger().warning(out.text, throttle_duration_sec=5.0)
            return
        if isinstance(out, Hold):
            if out.reason not in (HoldReason.ESTOP, HoldReason.DISABLED):
                self.get_logger().warning(f'holding: {out.text}', throttle_duration_sec=2.0)
            targets = out.position[None]
        else:
            targets = out.targets
        arm, names = self.arm_index, [self.joint_names[i] for i in self.arm_index]
        if self.p.output == 'forward':
            self.out_pub.publish(Float64MultiArray(data=[float(x) for x in targets[-1][arm]]))
        elif isinstance(out, Command):
            self.out_pub.publish(chunk_trajectory_msg(names, out.targets[:, arm], out.t_obs,
                                                      self.period, out.offset))
        else:
            self.out_pub.publish(trajectory_msg(names, out.position[arm], 0.0, self.period))
        if self.gripper_pub is not None:
            self._route_gripper(out, targets)

    def _route_gripper(self, out: Output, targets: np.ndarray):
        """The gripper's share of an arm command: a hold or a forward step at once; a chunk's
        targets each when due (the trajectory's times), sent by ``_send_gripper``."""
        g = self.gripper_index
        if isinstance(out, Command) and self.p.output == 'trajectory':
            self.gripper_due = [(out.t_obs + out.offset + i * self.period, float(q[g]))
                                for i, q in enumerate(out.targets)]
            self._send_gripper(self._now())
        else:
            self.gripper_due = []
            self.gripper_pub.publish(Float64MultiArray(data=[float(targets[-1][g])]))

    def _send_gripper(self, now: float):
        """The latest gripper target of the current chunk that is due by ``now``."""
        due = [v for t, v in self.gripper_due if t <= now + 1e-9]
        if due:
            self.gripper_due = self.gripper_due[len(due):]
            self.gripper_pub.publish(Float64MultiArray(data=[due[-1]]))

    # -- reporting ----------------------------------------------------------------------------
    def _status(self) -> dict:
        return {'state': 'error' if self.startup_error else str(self.ctl.state),
                'reason': str(self.startup_error) if self.startup_error else self.ctl.reason_text,
                'checked': self.ctl.checked, 'dry_run': bool(self.p.dry_run)}

    def _publish_status(self):
        with self.lock:
            self.published_status = (self.ctl.state, self.ctl.hold_reason)
        self.status_pub.publish(String(data=json.dumps(self._status())))

    def _sync_status(self):
        """Publish ~/status when the state or the kind of hold changed (not when only the
        details of a hold, such as the age of a stale stream, did)."""
        if (self.ctl.state, self.ctl.hold_reason) != self.published_status:
            self._publish_status()

    def _publish_diagnostics(self):
        status = self._status()
        level = {State.RUNNING: DiagnosticStatus.OK, State.DISABLED: DiagnosticStatus.OK,
                 State.HOLDING: DiagnosticStatus.WARN}.get(status['state'],
                                                           DiagnosticStatus.ERROR)
        with self.lock:
            counters = self.ctl.diagnostics(self._now())
        values = {
            'state': status['state'], 'hold_reason': status['reason'],
            'dry_run': str(bool(self.p.dry_run)), 'checkpoint': self.p.checkpoint, **counters}
        msg = DiagnosticArray()
        msg.header.stamp = self.get_clock().now().to_msg()
        msg.status = [DiagnosticStatus(
            level=level, name=f'{self.get_name()}: policy', hardware_id='policy',
            message=status['reason'] or status['state'],
            values=[KeyValue(key=k, value=v) for k, v in values.items()])]
        self.diag_pub.publish(msg)

    def close(self):
        self.worker.shutdown(wait=True, cancel_futures=True)


def main(args=None):
    from comsim_policy.inference import limit_cpu_threads  # noqa: PLC0415

    limit_cpu_threads()
    return run_node(PolicyNode, args)


if __name__ == '__main__':
    sys.exit(main())
