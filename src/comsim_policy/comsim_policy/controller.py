"""The policy's control decisions, free of ROS: what to send the arm, and when to predict.

`PolicyController` owns the observation history, the chunk scheduler, the safety monitor and
the counters; the ROS node (or an in-process evaluator) only feeds it observations and the
operator's requests, calls `update` on a timer, runs `predict` where it likes (the node: a
worker thread) and hands the result to `accept`. Every call that may move the arm returns an
`Output`: a `Command` to send, a `Hold` to send, a `Notice` (nothing sent, say why) or None.
Not thread-safe: a caller with threads holds one lock around every call except `predict`.
"""
from __future__ import annotations

import importlib
import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from comsim_core.control.limits import CommandShaper
from comsim_core.robot.model import RobotModel

from .action_space import UnreachablePose
from .control_loop import ChunkScheduler, Observation, ObservationHistory
from .safety import HoldReason, SafetyMonitor, State, UnsafeCommand


class Runner(Protocol):
    """What the controller needs of a policy (`PolicyRunner` and stand-ins)."""

    config: Any  # PolicyConfig: joint_names, camera_topics, camera_sizes, timing

    def predict(self, images: dict[str, np.ndarray], state: np.ndarray) -> np.ndarray: ...

    def reset(self) -> None: ...

    def check_compatible(self, joint_names: list[str],
                         cameras: dict[str, tuple[int, int]]) -> None: ...


@dataclass(frozen=True)
class Command:
    """Targets for the arm, rows one control period apart; the first row is due `offset` s
    after `t_obs`. `chunk` is a whole trajectory; otherwise one forward step, due now."""

    targets: np.ndarray
    t_obs: float
    offset: float
    chunk: bool


@dataclass(frozen=True)
class Hold:
    """Hold at `position` (finite, within the limits) because of `reason`."""

    reason: HoldReason
    text: str
    position: np.ndarray


@dataclass(frozen=True)
class Notice:
    """Nothing is sent; `text` says why (for the log). `error`: a command was withheld."""

    text: str
    error: bool


Output = Command | Hold | Notice | None


@dataclass(frozen=True)
class Request:
    """A prediction to run on `observation`, asked for at `t_request` in episode `generation`."""

    observation: Observation
    generation: int
    t_request: float


@dataclass(frozen=True)
class Prediction:
    """What `predict` gave for a request: actions, or the exception the runner raised."""

    request: Request
    actions: np.ndarray | None
    seconds: float
    error: Exception | None = None


class PolicyController:
    """Enable/e-stop, watchdog holds, chunk scheduling and shaping for one policy.

    `stream=True` steps through each chunk one row per control period (forward position
    controller); otherwise each accepted chunk is one `Command` (trajectory controller).
    """

    def __init__(self, runner: Runner, shaper: CommandShaper, stale_after_s: float,
                 inference_period: float = 0.0, stream: bool = False,
                 inference_timeout_s: float = 2.0):
        cfg = runner.config
        self.runner = runner
        self.joint_names = list(cfg.joint_names)
        self.cameras = list(cfg.camera_topics)
        self.period = 1.0 / float(cfg.control_hz)
        self.stream = stream
        # A prediction out longer than this holds the arm (a hung GPU or a stuck worker
        # thread): the chunk it would have replaced ran out long ago. 0 = never.
        self.inference_timeout_s = float(inference_timeout_s)
        self.safety = SafetyMonitor(shaper, stale_after_s)
        self.history = ObservationHistory(self.cameras, int(cfg.n_obs_steps), self.period)
        self.scheduler = ChunkScheduler(int(cfg.n_obs_steps), int(cfg.n_action_steps),
                                        self.period, inference_period)
        self.checked = False           # the robot matches the checkpoint: may run
        self.busy = False              # a prediction is out
        self.t_request = 0.0           # when it was asked for
        self.stalls = 0                # predictions that overran inference_timeout_s
        self.generation = 0            # bumped by every new episode or hold: late results ignored
        self.sent: tuple[np.ndarray, np.ndarray] | None = None  # published (times, targets)
        # (chunk, row) last streamed: a replacement chunk's row has the same index as the
        # old chunk's, and must still be sent.
        self.forward_key: tuple[int, int] | None = None
        self.q_measured: np.ndarray | None = None
        self.warm_up_ms: float | None = None
        self.infer_ms: deque[float] = deque(maxlen=50)
        self.obs_to_cmd_ms: deque[float] = deque(maxlen=50)
        self.chunks = self.dropped = 0
        self.withheld = 0              # commands not sent (nothing finite to send)

    # -- start-up -----------------------------------------------------------------------------
    def warm_up(self) -> float | None:
        """One prediction on blank inputs before any data arrives, so the first real chunk
        does not pay for torch's lazy set-up and fall due on arrival. Its milliseconds; None
        when the checkpoint does not state every camera's size. The runner's errors propagate
        (weights that load but cannot predict)."""
        cfg = self.runner.config
        if any(c not in cfg.camera_sizes for c in self.cameras):
            return None
        n = int(cfg.n_obs_steps)
        images = {c: np.zeros((n, *cfg.camera_sizes[c], 3), np.uint8) for c in self.cameras}
        t0 = time.perf_counter()
        try:
            self.runner.predict(images, np.zeros((n, len(self.joint_names))))
        except UnreachablePose:     # blank inputs at all-zero joints: the network ran
            pass
        self.runner.reset()
        self.warm_up_ms = (time.perf_counter() - t0) * 1e3
        return self.warm_up_ms

    def check_robot(self, joint_names: list[str], sizes: dict[str, tuple[int, int]]) -> None:
        """Let the policy run once the robot matches the checkpoint (the runner's mismatch
        error propagates)."""
        self.runner.check_compatible(joint_names, sizes)
        self.checked = True

    def lock_out(self) -> None:
        """Never move again (a fatal start-up error): the e-stop latches, nothing is sent."""
        self.safety.estop()

    # -- observations -------------------------------------------------------------------------
    def observe_joint_state(self, now: float, stamp: float, q) -> bool:
        """A measured position in the policy's joint order; False when it is not finite (it is
        dropped, and the watchdog holds at the last finite one)."""
        q = np.asarray(q, dtype=float)
        if not self.safety.check_joint_state(now, q, self.joint_names):
            return False
        self.q_measured = q
        self.history.add_joint_state(stamp, q)
        return True

    def observe_image(self, topic: str, stamp: float, rgb: np.ndarray) -> None:
        self.history.add_image(topic, stamp, rgb)

    # -- operator -----------------------------------------------------------------------------
    def set_enabled(self, on: bool) -> tuple[bool, str, Output]:
        """(accepted, why, what to send): disabling a moving arm holds it."""
        if on and not self.checked:
            return False, 'checkpoint not yet checked against the robot (waiting for data)', None
        was_moving = self.safety.may_move
        ok, why = self.safety.set_enabled(on)
        out = None
        if ok:
            self._new_episode()
            if on:
                self.runner.reset()
            elif was_moving:
                out = self._hold(HoldReason.DISABLED, 'disabled')
        return ok, why, out

    def estop(self) -> Output:
        """Latch the e-stop and hold where the arm is."""
        self.safety.estop()
        self._new_episode()
        return self._hold(HoldReason.ESTOP, 'e-stop latched')

    def reset_estop(self) -> None:
        """Clear the e-stop; the policy stays disabled until enabled again."""
        self.safety.reset_estop()

    # -- the loop -----------------------------------------------------------------------------
    @property
    def state(self) -> State:
        return self.safety.state

    @property
    def hold_reason(self) -> HoldReason | None:
        """Why the arm is not following the policy (None while it may)."""
        return {State.ESTOP: HoldReason.ESTOP, State.DISABLED: HoldReason.DISABLED}.get(
            self.state, self.safety.hold_kind)

    @property
    def reason_text(self) -> str:
        return self.safety.reason

    def _active(self) -> bool:
        return self.checked and self.state not in (State.ESTOP, State.DISABLED)

    def update(self, now: float) -> Output:
        """One tick of the watchdog (hold on stale or non-finite inputs, clear the hold when
        they are good) and, when streaming, the target due now."""
        if not self._active():
            return None
        was_observation_hold = self.safety.observation_hold
        self.safety.watchdog(now, self.history.last_times())
        if self.safety.observation_hold:
            if was_observation_hold:
                return None
            return self._drop_chunk_and_hold(self.safety.hold_kind, self.safety.hold_reason)
        if self.busy and self.inference_timeout_s > 0 \
                and now - self.t_request > self.inference_timeout_s \
                and self.safety.hold_kind != HoldReason.INFERENCE_STALLED:
            self.stalls += 1
            text = (f'inference stalled: no chunk {now - self.t_request:.1f} s after the '
                    f'request (limit {self.inference_timeout_s:g} s)')
            self.safety.hold(text, HoldReason.INFERENCE_STALLED)
            return self._drop_chunk_and_hold(HoldReason.INFERENCE_STALLED, text)
        target = self.scheduler.advance(now)
        if self.stream and target is not None and self.safety.may_move:
            key = (self.chunks, self.scheduler.chunk.executed)
            if key != self.forward_key:
                self.forward_key = key
                return self._command(Command(target[None], now, 0.0, chunk=False))
        return None

    def request(self, now: float) -> Request | None:
        """A prediction to run now, if one is due (no other is out, inputs are good)."""
        if not self._active() or self.safety.observation_hold or self.busy \
                or not self.history.ready() or not self.scheduler.should_request(now):
            return None
        self.busy = True
        self.t_request = now
        self.scheduler.note_request(now)
        return Request(self.history.observation(), self.generation, now)

    def predict(self, request: Request) -> Prediction:
        """Run the policy (any thread: touches only the runner); exceptions are returned."""
        obs = request.observation
        t0 = time.perf_counter()
        try:
            actions = self.runner.predict(obs.images, obs.state)
        except Exception as exc:  # a crashing model holds the arm, it does not kill the caller
            return Prediction(request, None, time.perf_counter() - t0, exc)
        return Prediction(request, actions, time.perf_counter() - t0)

    def accept(self, prediction: Prediction, now: float) -> Output:
        """Check, time and shape a fresh chunk; a bad one holds the arm."""
        self.busy = False
        request = prediction.request
        if prediction.error is not None:
            self.safety.hold(f'inference failed: {prediction.error!r}',
                             HoldReason.INFERENCE_FAILED)
            return self._drop_chunk_and_hold(HoldReason.INFERENCE_FAILED,
                                             self.safety.hold_reason)
        self.infer_ms.append(prediction.seconds * 1e3)
        self.scheduler.note_latency(max(now - request.t_request, 0.0))
        if request.generation != self.generation or not self._active() \
                or self.safety.observation_hold:
            return None
        try:
            actions = self.safety.check_chunk(prediction.actions, len(self.joint_names))
        except UnsafeCommand as exc:
            text = f'{exc}; chunk discarded'
            if self.safety.hold(text, exc.reason):
                return self._drop_chunk_and_hold(exc.reason, text)
            return None
        self.safety.clear_hold()  # a good chunk ends a hold caused by a bad one
        obs = request.observation
        chunk = self.scheduler.accept(actions, obs.t, now)
        self.chunks += 1
        self.dropped += chunk.dropped
        if not len(chunk.times):
            # Slow inference, or an old observation (a backlog of images after a slow start).
            return Notice(f'every action of the chunk was already due: observation '
                          f'{now - obs.t:.2f} s old, inference {prediction.seconds * 1e3:.0f} ms',
                          error=False)
        ref_t, ref_q = self._reference(chunk.times[0], now)
        chunk.actions = self.safety.shape(chunk.times, chunk.actions, ref_t, ref_q)
        self.sent = (chunk.times.copy(), chunk.actions.copy())
        self.obs_to_cmd_ms.append((now - obs.t) * 1e3)
        if self.stream:
            return None  # `update` steps through it
        return self._command(Command(chunk.actions, obs.t, float(chunk.times[0] - obs.t),
                                     chunk=True))

    # -- internals ----------------------------------------------------------------------------
    def _new_episode(self) -> None:
        self.generation += 1
        self.scheduler.reset()
        self.sent = None
        self.forward_key = None

    def _drop_chunk_and_hold(self, reason: HoldReason, text: str) -> Output:
        self._new_episode()
        return self._hold(reason, text)

    def _reference(self, t_first: float, now: float):
        """Where the velocity clamp starts: the last sent target due before t_first, else the
        measured position now."""
        if self.sent is not None:
            times, targets = self.sent
            i = int(np.searchsorted(times, t_first, side='left')) - 1
            if i >= 0:
                return float(times[i]), targets[i]
        return now, self.q_measured

    def _hold(self, reason: HoldReason, text: str) -> Hold | Notice:
        """Hold where the arm is (it otherwise keeps executing the last chunk): at the last
        finite measured position, or nothing before there is one."""
        q = self.safety.hold_target(self.q_measured)
        if q is None:
            self.withheld += 1
            return Notice('cannot hold: no finite joint state measured yet; nothing sent',
                          error=True)
        return Hold(reason, text, q)

    def _command(self, command: Command) -> Command | Notice:
        """The last check before the arm: a command with a non-finite value is never sent."""
        if not np.all(np.isfinite(command.targets)):
            self.withheld += 1
            return Notice('non-finite command withheld (never sent to the arm)', error=True)
        return command

    def diagnostics(self, now: float) -> dict[str, str]:
        """The controller's latencies, rates and counters, as /diagnostics values."""
        infer, latency = list(self.infer_ms), list(self.obs_to_cmd_ms)
        return {
            'inference_latency_ms_median': f'{np.median(infer):.1f}' if infer else 'n/a',
            'warm_up_ms': 'n/a' if self.warm_up_ms is None else f'{self.warm_up_ms:.1f}',
            'obs_to_command_ms_median': f'{np.median(latency):.1f}' if latency else 'n/a',
            'control_rate_hz': f'{self.scheduler.achieved_rate(now):.2f}',
            'target_control_rate_hz': f'{1 / self.period:g}',
            'chunks': str(self.chunks), 'dropped_actions': str(self.dropped),
            'nan_chunks': str(self.safety.nan_chunks),
            'clamped_actions': str(self.safety.clamped_actions),
            'withheld_commands': str(self.withheld),
            'inference_stalls': str(self.stalls),
            'inference_out_s': f'{now - self.t_request:.2f}' if self.busy else '0'}


# -- building one -----------------------------------------------------------------------------
OUTPUTS = ('trajectory', 'forward')


class ControllerSetupError(ValueError):
    """The controller cannot be built as asked (bad parameter, joints the robot lacks); the
    caller adds where the parameter came from (the node, the evaluator)."""


def load_runner_class(path: str):
    """The class named by ``module:Class`` (a node's ``runner_class`` parameter)."""
    module, _, attr = path.partition(':')
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError, ValueError) as exc:
        raise ControllerSetupError(f'runner_class {path!r} not importable: {exc}') from exc


def check_kinematics(runner: Runner, robot: RobotModel, robot_model: str) -> None:
    """An end-effector policy's poses become joint targets through the kinematics it was
    trained with (its checkpoint's robot model): on an arm whose model moves the tool
    elsewhere for the same joints they would be wrong targets, so the controller refuses.
    Compared by the tool's position at a few joint vectors, not by file path, so the same
    model at another path on the robot is accepted."""
    space = getattr(runner, 'space', None)
    if getattr(space, 'name', '') != 'end_effector':
        return
    trained = space.robot
    lo, hi = robot.lower[:robot.n_arm], robot.upper[:robot.n_arm]
    same = trained.n_arm == robot.n_arm
    for q in (robot.home[:robot.n_arm], (lo + hi) / 2, lo + 0.3 * (hi - lo)):
        err = float(np.linalg.norm(trained.fk(q)[0] - robot.fk(q)[0])) if same else np.inf
        if err > 1e-3:
            raise ControllerSetupError(
                f"the checkpoint's end-effector actions were trained on the robot model "
                f"{runner.config.robot_model or 'of the ComSim arm'!r}; robot_model "
                f"{robot_model or 'the ComSim arm'!r} puts the tool {err * 100:.1f} cm "
                f"elsewhere for the same joints: set the node's robot_model to the arm the "
                f"policy was trained for, or retrain on this arm's model")


def build_controller(runner: Runner, *, robot_model: str = '', velocity_scale: float = 1.0,
                     stale_after_s: float, inference_rate_hz: float = 0.0,
                     output: str = 'trajectory',
                     inference_timeout_s: float = 2.0) -> PolicyController:
    """The controller for ``runner`` from the deploy parameters: the robot's limits in the
    policy's joint order (a policy may name a subset), the velocity scale, the inference rate
    (0: just in time), the output (``forward`` streams one row per control period) and how
    long a prediction may take before the arm holds."""
    if output not in OUTPUTS:
        raise ControllerSetupError(f"output must be 'trajectory' or 'forward', got {output!r}")
    robot = RobotModel.load(robot_model or None)
    index = {n: i for i, n in enumerate(robot.joint_names)}
    joints = list(runner.config.joint_names)
    missing = [n for n in joints if n not in index]
    if missing:
        raise ControllerSetupError(f'joints {missing} of the checkpoint are not in the robot '
                                   f'model (has {robot.joint_names})')
    check_kinematics(runner, robot, robot_model)
    idx = [index[n] for n in joints]
    shaper = CommandShaper(robot.lower[idx], robot.upper[idx], robot.max_velocity[idx],
                           float(velocity_scale))
    rate = float(inference_rate_hz)
    return PolicyController(runner, shaper, float(stale_after_s), 1.0 / rate if rate > 0 else 0.0,
                            stream=output == 'forward',
                            inference_timeout_s=float(inference_timeout_s))
