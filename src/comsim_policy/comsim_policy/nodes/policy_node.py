"""Policy node: cameras and joint states in, action chunks out, behind a safety layer.

Loads a checkpoint (`PolicyRunner`), checks it against the robot it finds (joint names from
`/joint_states`, camera topics and image sizes from the first images) and refuses to start on a
mismatch. While enabled (`~/enable`), it predicts chunks in a worker thread from the observation
history and publishes them as one `JointTrajectory` stamped with the observation time (or steps
through them on the forward position controller). Actions already due when a chunk arrives are
dropped; the next chunk is computed while the current one runs.

Safety (`comsim_policy.safety`): stale observations, non-finite joint states and non-finite
outputs hold position (a non-finite joint state is dropped: holds use the last finite one, and
no command with a non-finite value is ever published); the e-stop (`~/estop`) latches until
`~/reset_estop`; `dry_run` sends nothing to the arm and publishes what it would send on
`~/dry_run_commands`; every target is clamped to joint and velocity limits. State, hold reason,
inference latency, achieved rates and counts of discarded, clamped and withheld commands go to
/diagnostics.
"""
from __future__ import annotations

import importlib
import json
import sys
import threading
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from sensor_msgs.msg import Image, JointState
from std_msgs.msg import Float64MultiArray, String
from std_srvs.srv import SetBool, Trigger
from trajectory_msgs.msg import JointTrajectory

from comsim_core.control.limits import CommandShaper
from comsim_core.robot.model import RobotModel
from comsim_core.ros.messages import (
    COMMAND_QOS,
    IMAGE_QOS,
    LATCHED_QOS,
    SENSOR_QOS,
    chunk_trajectory_msg,
    time_to_sec,
    trajectory_msg,
)
from comsim_core.ros.params import declare_parameters
from comsim_core.ros.run import NodeStartupError, run_node
from comsim_policy.control_loop import ChunkScheduler, ObservationHistory
from comsim_policy.safety import SafetyMonitor, UnsafeCommand

DEFAULTS = {
    'checkpoint': '',
    'device': '',                       # '' = the runner's choice (GPU when there is one)
    'runner_class': 'comsim_policy.inference:PolicyRunner',
    'robot_model': '',
    'output': 'trajectory',             # trajectory | forward
    'trajectory_topic': '/joint_trajectory_controller/joint_trajectory',
    'forward_topic': '/forward_position_controller/commands',
    'joint_states_topic': '/joint_states',
    'inference_rate_hz': 0.0,           # 0 = ask for the next chunk just in time
    'stale_after_s': 0.5,
    'velocity_scale': 1.0,
    'dry_run': False,
    'start_enabled': False,
    'startup_timeout_s': 60.0,
    'diagnostics_period_s': 1.0,
}


class PolicyStartupError(NodeStartupError):
    """The node cannot run this checkpoint on this robot (mismatch, missing topics)."""


def load_runner_class(path: str):
    module, _, attr = path.partition(':')
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise PolicyStartupError(f'policy: runner_class {path!r} not importable: {exc}') from exc


def image_to_rgb(msg: Image) -> np.ndarray:
    """rgb8/bgr8 Image -> (H, W, 3) uint8; other encodings are refused."""
    if msg.encoding not in ('rgb8', 'bgr8'):
        raise ValueError(f'unsupported image encoding {msg.encoding!r} (rgb8 or bgr8)')
    rows = np.frombuffer(bytes(msg.data), np.uint8).reshape(msg.height, msg.step)
    rgb = rows[:, :msg.width * 3].reshape(msg.height, msg.width, 3)
    return rgb[..., ::-1].copy() if msg.encoding == 'bgr8' else rgb.copy()


class PolicyNode(Node):
    def __init__(self):
        super().__init__('policy')
        self.p = declare_parameters(self, DEFAULTS)
        if self.p.output not in ('trajectory', 'forward'):
            raise PolicyStartupError("policy: output must be 'trajectory' or 'forward'")
        if not self.p.checkpoint:
            raise PolicyStartupError('policy: parameter checkpoint is empty (a checkpoint dir)')
        runner_cls = load_runner_class(self.p.runner_class)
        self.mismatch_error = getattr(sys.modules[runner_cls.__module__],
                                      'PolicyMismatchError', ValueError)
        try:
            self.runner = runner_cls.load(self.p.checkpoint, device=self.p.device or None)
        except Exception as exc:  # missing files, bad config, weights that do not fit
            raise PolicyStartupError(f'cannot load checkpoint {self.p.checkpoint!r}: {exc}') \
                from exc
        cfg = self.runner.config
        self.joint_names = list(cfg.joint_names)
        self.cameras = list(cfg.camera_topics)
        self.period = 1.0 / float(cfg.control_hz)
        self.warm_up_ms = self._warm_up()
        robot = RobotModel.load(self.p.robot_model or None)
        lower, upper, vmax = self._limits(robot)
        self.safety = SafetyMonitor(CommandShaper(lower, upper, vmax, self.p.velocity_scale),
                                    float(self.p.stale_after_s))
        self.history = ObservationHistory(self.cameras, int(cfg.n_obs_steps), self.period)
        rate = float(self.p.inference_rate_hz)
        self.scheduler = ChunkScheduler(int(cfg.n_obs_steps), int(cfg.n_action_steps),
                                        self.period, 1.0 / rate if rate > 0 else 0.0)
        self.lock = threading.RLock()
        self.worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix='policy_infer')
        self.busy = False
        self.generation = 0            # bumped on enable/disable/e-stop: stale results ignored
        self.sent: tuple[np.ndarray, np.ndarray] | None = None  # published (times, targets)
        self.forward_index = -1
        self.q_measured: np.ndarray | None = None
        self.js_names: list[str] | None = None
        self.sizes: dict[str, tuple[int, int]] = {}
        self.checked = False
        self.startup_error: Exception | None = None
        self.t_start = time.monotonic()
        self.infer_ms: deque[float] = deque(maxlen=50)
        self.obs_to_cmd_ms: deque[float] = deque(maxlen=50)
        self.dropped = self.chunks = 0
        self.withheld = 0              # commands not sent because they were not finite

        self.create_subscription(JointState, self.p.joint_states_topic, self._on_joint_state,
                                 SENSOR_QOS)
        for topic in self.cameras:
            self.create_subscription(Image, topic, self._image_cb(topic), IMAGE_QOS)
        if self.p.dry_run:
            self.arm_pub = None
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
            f'{self.cameras}, {cfg.control_hz:g} Hz, output={self.p.output} -> {out_topic}'
            f'{" (DRY RUN)" if self.p.dry_run else ""}')

    def _warm_up(self) -> float | None:
        """One prediction on blank inputs before any data arrives, so the first real chunk
        does not pay for torch's lazy set-up (several steady inferences) and fall due on arrival.
        Returns its milliseconds; None when the checkpoint does not state every camera's size."""
        cfg = self.runner.config
        if any(c not in cfg.camera_sizes for c in self.cameras):
            return None
        n = int(cfg.n_obs_steps)
        images = {c: np.zeros((n, *cfg.camera_sizes[c], 3), np.uint8) for c in self.cameras}
        t0 = time.perf_counter()
        try:
            self.runner.predict(images, np.zeros((n, len(self.joint_names))))
        except Exception as exc:  # weights that load but cannot run (shapes, dtypes)
            raise PolicyStartupError(f'checkpoint {self.p.checkpoint!r} cannot predict on '
                                     f'its own input shapes: {exc}') from exc
        self.runner.reset()
        return (time.perf_counter() - t0) * 1e3

    def _limits(self, robot: RobotModel):
        """Robot limits in the policy's joint order (a policy may name a subset)."""
        index = {n: i for i, n in enumerate(robot.joint_names)}
        missing = [n for n in self.joint_names if n not in index]
        if missing:
            raise PolicyStartupError(f'policy: joints {missing} of the checkpoint are not in the '
                                     f'robot model (has {robot.joint_names})')
        idx = [index[n] for n in self.joint_names]
        return robot.lower[idx], robot.upper[idx], robot.max_velocity[idx]

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
            if not self.safety.check_joint_state(self._now(), q, self.joint_names):
                return  # never used; the watchdog holds at the last finite position
            self.q_measured = q
            self.history.add_joint_state(time_to_sec(msg.header.stamp), q)

    def _image_cb(self, topic):
        def callback(msg: Image):
            try:
                rgb = image_to_rgb(msg)
            except ValueError as exc:
                self.get_logger().error(f'{topic}: {exc}', throttle_duration_sec=5.0)
                return
            if topic not in self.sizes:
                self.sizes[topic] = rgb.shape[:2]
                self._check_compatible()
            with self.lock:
                self.history.add_image(topic, time_to_sec(msg.header.stamp), rgb)
        return callback

    def _check_compatible(self):
        """Once joint names and every camera's size are known: the checkpoint must match."""
        if self.checked or self.js_names is None or set(self.sizes) != set(self.cameras):
            return
        try:
            self.runner.check_compatible(self.js_names, dict(self.sizes))
        except self.mismatch_error as exc:
            self._fail(PolicyStartupError(f'checkpoint {self.p.checkpoint} does not match this '
                                          f'robot: {exc}'))
            return
        self.checked = True
        self.get_logger().info('checkpoint matches the robot (joints, cameras, image sizes)')
        if self.p.start_enabled:
            self._set_enabled(True)
        self._publish_status()

    def _check_startup(self):
        if self.checked or self.startup_error:
            return
        if time.monotonic() - self.t_start > float(self.p.startup_timeout_s):
            images = sorted(t for t, types in self.get_topic_names_and_types()
                            if 'sensor_msgs/msg/Image' in types)
            missing = [c for c in self.cameras if c not in self.sizes]
            if self.js_names is None:
                missing.append(self.p.joint_states_topic)
            self._fail(PolicyStartupError(
                f'no data on {missing} after {self.p.startup_timeout_s:g} s; '
                f'image topics seen: {images}'))

    def _fail(self, exc: Exception):
        """Fatal at start-up: never move, say why everywhere, and stop the node."""
        self.startup_error = exc
        self.safety.estop()
        self.get_logger().fatal(str(exc))
        self._publish_status()
        self._publish_diagnostics()
        raise exc

    # -- services -----------------------------------------------------------------------------
    def _set_enabled(self, on: bool) -> tuple[bool, str]:
        with self.lock:
            if on and not self.checked:
                return False, 'checkpoint not yet checked against the robot (waiting for data)'
            was_moving = self.safety.may_move
            ok, why = self.safety.set_enabled(on)
            if ok:
                self._new_episode()
                if on:
                    self.runner.reset()
                elif was_moving:
                    self._send_hold()
        self._publish_status()
        return ok, why

    def _new_episode(self):
        self.generation += 1
        self.scheduler.reset()
        self.sent = None
        self.forward_index = -1

    def _on_enable(self, req, resp):
        resp.success, resp.message = self._set_enabled(req.data)
        return resp

    def _on_estop(self, req, resp):
        with self.lock:
            self.safety.estop()
            self._new_episode()
            self._send_hold()
        self.get_logger().warning('E-STOP: holding position until ~/reset_estop and ~/enable')
        self._publish_status()
        resp.success, resp.message = True, 'e-stop latched'
        return resp

    def _on_reset_estop(self, req, resp):
        with self.lock:
            self.safety.reset_estop()
        self._publish_status()
        resp.success, resp.message = True, 'e-stop cleared; call ~/enable to move'
        return resp

    # -- the loop -----------------------------------------------------------------------------
    def _tick(self):
        now = self._now()
        with self.lock:
            if self.safety.state in ('estop', 'disabled') or not self.checked:
                return
            before, was_observation_hold = self.safety.hold_reason, self.safety.observation_hold
            reason = self.safety.watchdog(now, self.history.last_times())
            if self.safety.observation_hold:
                if not was_observation_hold:
                    self._drop_chunk_and_hold(reason)
                return
            if before != reason:
                self._publish_status()
            target = self.scheduler.advance(now)
            if self.p.output == 'forward' and target is not None and self.safety.may_move:
                index = self.scheduler.chunk.executed
                if index != self.forward_index:
                    self.forward_index = index
                    self._publish([target])
            if not self.busy and self.scheduler.should_request(now):
                self._request(now)

    def _drop_chunk_and_hold(self, reason: str):
        self.get_logger().warning(f'holding: {reason}', throttle_duration_sec=2.0)
        self._new_episode()
        self._send_hold()
        self._publish_status()

    def _request(self, now: float):
        obs = self.history.observation()
        self.busy = True
        self.scheduler.note_request(now)
        generation = self.generation
        future = self.worker.submit(self._predict, obs)
        future.add_done_callback(lambda f: self._on_prediction(f, obs, generation, now))

    def _predict(self, obs):
        t0 = time.perf_counter()
        actions = self.runner.predict(obs.images, obs.state)
        return actions, time.perf_counter() - t0

    def _on_prediction(self, future, obs, generation, t_request):
        """In the worker thread: check, shape and send a fresh chunk."""
        with self.lock:
            self.busy = False
            try:
                actions, seconds = future.result()
            except Exception as exc:  # a crashing model holds the arm, it does not kill the node
                self.safety.hold(f'inference failed: {exc!r}')
                self._drop_chunk_and_hold(self.safety.hold_reason)
                return
            self.infer_ms.append(seconds * 1e3)
            # Scheduling runs on the node's clock (sim time under use_sim_time), so does this.
            self.scheduler.note_latency(max(self._now() - t_request, 0.0))
            if generation != self.generation or self.safety.state in ('estop', 'disabled'):
                return
            if self.safety.observation_hold:
                return
            try:
                actions = self.safety.check_chunk(actions, len(self.joint_names))
            except UnsafeCommand as exc:
                if self.safety.hold(f'{exc}; chunk discarded'):
                    self._drop_chunk_and_hold(self.safety.hold_reason)
                return
            if self.safety.hold_reason:  # a good chunk ends a hold caused by a bad one
                self.safety.clear_hold()
                self._publish_status()
            now = self._now()
            chunk = self.scheduler.accept(actions, obs.t, now)
            self.chunks += 1
            self.dropped += chunk.dropped
            if not len(chunk.times):
                # Slow inference, or an old observation (a backlog of images after a slow start).
                self.get_logger().warning(
                    f'every action of the chunk was already due: observation {now - obs.t:.2f} s '
                    f'old, inference {seconds * 1e3:.0f} ms', throttle_duration_sec=5.0)
                return
            ref_t, ref_q = self._reference(chunk.times[0], now)
            chunk.actions = self.safety.shape(chunk.times, chunk.actions, ref_t, ref_q)
            self.sent = (chunk.times.copy(), chunk.actions.copy())
            if self.p.output == 'trajectory':
                self._publish(chunk.actions, lambda: chunk_trajectory_msg(
                    self.joint_names, chunk.actions, obs.t, self.period,
                    float(chunk.times[0] - obs.t)))
            self.obs_to_cmd_ms.append((self._now() - obs.t) * 1e3)

    def _reference(self, t_first: float, now: float):
        """Where the velocity clamp starts: the last sent target due before t_first, else the
        measured position now."""
        if self.sent is not None:
            times, targets = self.sent
            i = int(np.searchsorted(times, t_first, side='left')) - 1
            if i >= 0:
                return float(times[i]), targets[i]
        return now, self.q_measured

    def _send_hold(self):
        """Hold where the arm is (the arm otherwise keeps executing the last chunk): at the last
        finite measured position, or nothing before there is one."""
        q = self.safety.hold_target(self.q_measured)
        if q is None:
            self.withheld += 1
            self.get_logger().error('cannot hold: no finite joint state measured yet; nothing '
                                    'sent', throttle_duration_sec=5.0)
            return
        self._publish([q], lambda: trajectory_msg(self.joint_names, q, 0.0, self.period))

    def _publish(self, targets, trajectory=None):
        """The one way out to the arm: rows of targets as a trajectory (`trajectory()` builds
        it) or forward commands (one row); refused, counted and logged if any is not finite."""
        if not np.all(np.isfinite(np.asarray(targets, dtype=float))):
            self.withheld += 1
            self.get_logger().error('non-finite command withheld (never sent to the arm)',
                                    throttle_duration_sec=5.0)
            return
        if self.p.output == 'trajectory':
            self.out_pub.publish(trajectory())
        else:
            self.out_pub.publish(Float64MultiArray(data=[float(x) for x in targets[-1]]))

    # -- reporting ----------------------------------------------------------------------------
    def _status(self) -> dict:
        return {'state': 'error' if self.startup_error else self.safety.state,
                'reason': str(self.startup_error) if self.startup_error else self.safety.reason,
                'checked': self.checked, 'dry_run': bool(self.p.dry_run)}

    def _publish_status(self):
        self.status_pub.publish(String(data=json.dumps(self._status())))

    def _publish_diagnostics(self):
        status = self._status()
        level = {'running': DiagnosticStatus.OK, 'disabled': DiagnosticStatus.OK,
                 'holding': DiagnosticStatus.WARN}.get(status['state'], DiagnosticStatus.ERROR)
        with self.lock:
            infer = list(self.infer_ms)
            latency = list(self.obs_to_cmd_ms)
            rate = self.scheduler.achieved_rate(self._now())
        values = {
            'state': status['state'], 'hold_reason': status['reason'],
            'dry_run': str(bool(self.p.dry_run)), 'checkpoint': self.p.checkpoint,
            'inference_latency_ms_median': f'{np.median(infer):.1f}' if infer else 'n/a',
            'warm_up_ms': 'n/a' if self.warm_up_ms is None else f'{self.warm_up_ms:.1f}',
            'obs_to_command_ms_median': f'{np.median(latency):.1f}' if latency else 'n/a',
            'control_rate_hz': f'{rate:.2f}', 'target_control_rate_hz': f'{1 / self.period:g}',
            'chunks': str(self.chunks), 'dropped_actions': str(self.dropped),
            'nan_chunks': str(self.safety.nan_chunks),
            'clamped_actions': str(self.safety.clamped_actions),
            'withheld_commands': str(self.withheld)}
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
