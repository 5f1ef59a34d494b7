"""What stands between a learned policy and the arm: enable, e-stop, watchdog, NaN guard, limits.

A policy fails in ways a teleoperator does not: it outputs NaN, it keeps acting on a frozen
camera, it asks for jumps. `SafetyMonitor` decides whether motion is allowed and why not, and
shapes every action chunk with the same `CommandShaper` teleop uses (joint limits, per-step
velocity clamps), so no source can bypass them. It is plain Python; the node only wires it up.
"""
from __future__ import annotations

from enum import Enum, StrEnum

import numpy as np

from comsim_core.control.limits import CommandShaper


class State(StrEnum):
    """What the policy may do, in the order the states take precedence (strings on the wire:
    ~/status and /diagnostics carry them as they are)."""

    ESTOP = 'estop'
    DISABLED = 'disabled'
    HOLDING = 'holding'
    RUNNING = 'running'


class HoldReason(Enum):
    """Why the arm holds instead of following the policy (the text that goes with a hold says
    the details: which stream, how old, which joints)."""

    ESTOP = 'estop'
    DISABLED = 'disabled'
    STALE_CAMERA = 'stale_camera'
    STALE_JOINT_STATE = 'stale_joint_state'
    BAD_STATE = 'bad_state'
    NAN_OUTPUT = 'nan_output'
    BAD_OUTPUT = 'bad_output'
    INFERENCE_FAILED = 'inference_failed'
    INFERENCE_STALLED = 'inference_stalled'

    @property
    def observation(self) -> bool:
        """A hold on the inputs: the policy must not run on them until the watchdog clears it."""
        return self in (HoldReason.STALE_CAMERA, HoldReason.STALE_JOINT_STATE,
                        HoldReason.BAD_STATE)


# How the texts of observation holds begin.
STALE, BAD_STATE = 'stale observation', 'non-finite joint state'


class UnsafeCommand(ValueError):
    """A policy output that must never reach the arm (non-finite, wrong shape)."""

    def __init__(self, reason: HoldReason, text: str):
        super().__init__(text)
        self.reason = reason


class SafetyMonitor:
    """Enable/e-stop state, hold reasons, and the shaping of commands.

    The e-stop latches: only `reset_estop` clears it, and the policy stays disabled afterwards
    until enabled again. Holds (stale observations, a bad chunk) clear by themselves once the
    cause is gone; leaving a hold restarts the velocity clamp from the measured position.
    """

    def __init__(self, shaper: CommandShaper, stale_after_s: float):
        if stale_after_s <= 0:
            raise ValueError('stale_after_s must be > 0')
        self.shaper = shaper
        self.stale_after_s = float(stale_after_s)
        self.enabled = False
        self.estopped = False
        self.hold_reason: str | None = None          # the text of the hold, for people
        self.hold_kind: HoldReason | None = None     # its kind, for decisions
        self.nan_chunks = 0
        self.clamped_actions = 0       # actions moved by the limits (a policy asking too much)
        self.bad_state: tuple[float, list[str]] | None = None  # (when, joints) of the last NaN

    @property
    def state(self) -> State:
        if self.estopped:
            return State.ESTOP
        if not self.enabled:
            return State.DISABLED
        return State.HOLDING if self.hold_reason else State.RUNNING

    @property
    def may_move(self) -> bool:
        return self.state == State.RUNNING

    @property
    def observation_hold(self) -> bool:
        """Holding because of the inputs (stale, non-finite): the policy must not run on them."""
        return self.hold_kind is not None and self.hold_kind.observation

    @property
    def reason(self) -> str:
        """Why the arm is not moving ('' when it may)."""
        return {State.ESTOP: 'e-stop latched (call ~/reset_estop, then ~/enable)',
                State.DISABLED: 'disabled (call ~/enable)',
                State.HOLDING: self.hold_reason or '', State.RUNNING: ''}[self.state]

    # -- operator inputs ----------------------------------------------------------------------
    def set_enabled(self, on: bool) -> tuple[bool, str]:
        if on and self.estopped:
            return False, 'e-stop is latched: call ~/reset_estop first'
        self.enabled = bool(on)
        self.hold_reason = self.hold_kind = None
        self.shaper.reset()
        return True, f'enabled={self.enabled}'

    def estop(self) -> None:
        self.estopped, self.enabled = True, False

    def reset_estop(self) -> None:
        self.estopped = False

    # -- automatic holds ----------------------------------------------------------------------
    def stale_streams(self, now: float, last_times: dict[str, float | None]) -> list[str]:
        """Streams with no sample or none newer than `stale_after_s` at `now`."""
        return sorted(k for k, t in last_times.items()
                      if t is None or now - t > self.stale_after_s)

    def check_joint_state(self, now: float, q, names) -> bool:
        """Whether a measured position may be used; a non-finite one is dropped and holds the
        arm (see `watchdog`) until positions have been finite for `stale_after_s`."""
        bad = [n for n, v in zip(names, np.asarray(q, dtype=float)) if not np.isfinite(v)]
        if bad:
            self.bad_state = (float(now), bad)
        return not bad

    def watchdog(self, now: float, last_times: dict[str, float | None]) -> str | None:
        """Hold on stale or non-finite observations; clear such a hold once they are good."""
        stale = self.stale_streams(now, last_times)
        if stale:
            ages = ', '.join(f'{k} ' + ('never received' if last_times[k] is None
                                        else f'{now - last_times[k]:.2f} s old') for k in stale)
            kind = HoldReason.STALE_JOINT_STATE if 'joint_states' in stale \
                else HoldReason.STALE_CAMERA
            self.hold(f'{STALE} ({ages}; limit {self.stale_after_s:g} s)', kind)
        elif self.bad_state and now - self.bad_state[0] <= self.stale_after_s:
            self.hold(f'{BAD_STATE} ({", ".join(self.bad_state[1])} NaN or inf, '
                      f'{now - self.bad_state[0]:.2f} s ago; dropped, holding the last finite '
                      f'position until finite for {self.stale_after_s:g} s)', HoldReason.BAD_STATE)
        elif self.observation_hold:
            self.clear_hold()
        return self.hold_reason

    def hold(self, text: str, kind: HoldReason = HoldReason.BAD_OUTPUT) -> bool:
        """Enter (or stay in) a hold; True when this is a new hold (send one hold command).
        Observation holds come from `watchdog`; others are about the policy's output."""
        new = self.hold_reason is None
        self.hold_reason, self.hold_kind = text, kind
        return new

    def clear_hold(self) -> None:
        if self.hold_reason is not None:
            self.hold_reason = self.hold_kind = None
            self.shaper.reset()

    # -- commands -----------------------------------------------------------------------------
    def hold_target(self, q) -> np.ndarray | None:
        """Where to hold: `q` within the joint limits, or None when there is no finite `q`
        (clipping NaN gives NaN: nothing must be sent then)."""
        if q is None:
            return None
        q = np.asarray(q, dtype=float)
        if q.shape != self.shaper.lower.shape or not np.all(np.isfinite(q)):
            return None
        return np.clip(q, self.shaper.lower, self.shaper.upper)

    def check_chunk(self, actions, n_joints: int) -> np.ndarray:
        """The chunk as floats; `UnsafeCommand` on NaN/inf or a wrong shape."""
        actions = np.asarray(actions, dtype=float)
        if actions.ndim != 2 or actions.shape[1] != n_joints:
            raise UnsafeCommand(HoldReason.BAD_OUTPUT, f'policy output has shape '
                                f'{actions.shape}, expected (steps, {n_joints})')
        if not np.all(np.isfinite(actions)):
            self.nan_chunks += 1
            raise UnsafeCommand(HoldReason.NAN_OUTPUT, 'policy output contains NaN or inf')
        return actions

    def shape(self, times, actions, ref_time: float, ref_q) -> np.ndarray:
        """Clamp a timed chunk to joint limits and velocity limits, starting from (ref_time,
        ref_q): the position commanded (or measured) just before the chunk's first action."""
        times = np.asarray(times, dtype=float)
        self.shaper.reset(ref_q)
        out, t_prev = [], float(ref_time)
        for t, a in zip(times, actions):
            # dt 0 would skip CommandShaper's velocity clamp: a tiny dt clamps to (almost) no step.
            out.append(self.shaper(a, max(float(t) - t_prev, 1e-9)))
            self.clamped_actions += int(np.any(np.abs(out[-1] - np.asarray(a, float)) > 1e-9))
            t_prev = float(t)
        return np.array(out).reshape(len(out), -1)
