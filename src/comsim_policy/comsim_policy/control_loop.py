"""Closed-loop timing of a chunked policy, free of ROS: observation history and action chunks.

Diffusion Policy predicts `pred_horizon` actions from `obs_horizon` observations spaced at its
control period; row `obs_horizon - 1` of a chunk is the action for the (latest) observation's
time, later rows one period apart. Inference takes time, so a chunk arrives late: the rows whose
time has passed by then are dropped (Chi et al. 2023), the rest replace the running chunk, and the
next chunk is requested early enough to arrive before the current one runs out.
"""
from __future__ import annotations

import bisect
from collections import deque
from dataclasses import dataclass, field

import numpy as np


class ObservationError(RuntimeError):
    """Not enough observations yet to build the policy's input."""


@dataclass
class Observation:
    """Policy input: `images[topic]` (T, H, W, 3) uint8, `state` (T, J), sampled at `times`."""

    t: float
    times: np.ndarray
    images: dict[str, np.ndarray]
    state: np.ndarray


class _Stream:
    """Timestamped samples of one topic, oldest dropped beyond `keep_s` seconds."""

    def __init__(self, keep_s: float):
        self.keep_s = keep_s
        self.times: deque[float] = deque()
        self.values: deque = deque()

    def add(self, t: float, value) -> None:
        if self.times and t < self.times[-1]:  # clock jumped back (sim reset): start over
            self.times.clear()
            self.values.clear()
        self.times.append(t)
        self.values.append(value)
        while len(self.times) > 2 and self.times[0] < t - self.keep_s:
            self.times.popleft()
            self.values.popleft()

    def nearest(self, t: float):
        times = list(self.times)
        i = bisect.bisect_left(times, t)
        if i == 0:
            return self.values[0]
        if i == len(times):
            return self.values[-1]
        return self.values[i] if times[i] - t < t - times[i - 1] else self.values[i - 1]

    @property
    def last_time(self) -> float | None:
        return self.times[-1] if self.times else None


class ObservationHistory:
    """Latest images and joint states; builds `obs_horizon` steps spaced by the policy period.

    Streams arrive at their own rates (cameras 30 Hz, joints 200 Hz); each step takes the sample
    nearest its time, so the policy sees observations spaced as in its training data.
    """

    def __init__(self, cameras: list[str], obs_horizon: int, period: float):
        if obs_horizon < 1 or period <= 0:
            raise ValueError('obs_horizon must be >= 1 and period > 0')
        self.cameras = list(cameras)
        self.obs_horizon = int(obs_horizon)
        self.period = float(period)
        keep = period * (obs_horizon + 1) + 0.5
        self.images = {c: _Stream(keep) for c in self.cameras}
        self.joints = _Stream(keep)

    def clear(self) -> None:
        for s in [*self.images.values(), self.joints]:
            s.times.clear()
            s.values.clear()

    def add_image(self, topic: str, t: float, rgb: np.ndarray) -> None:
        self.images[topic].add(t, rgb)

    def add_joint_state(self, t: float, q) -> None:
        self.joints.add(t, np.asarray(q, dtype=float))

    def last_times(self) -> dict[str, float | None]:
        """Stamp of the newest sample per stream ('joint_states' and each camera topic)."""
        out = {c: s.last_time for c, s in self.images.items()}
        out['joint_states'] = self.joints.last_time
        return out

    def ready(self) -> bool:
        return all(t is not None for t in self.last_times().values())

    def observation(self) -> Observation:
        """The input at the newest image time (the slowest stream fixes the observation time)."""
        if not self.ready():
            missing = [k for k, t in self.last_times().items() if t is None]
            raise ObservationError(f'no data yet on {missing}')
        t_obs = min(s.last_time for s in self.images.values())
        times = t_obs - self.period * np.arange(self.obs_horizon - 1, -1, -1)
        images = {c: np.stack([s.nearest(t) for t in times]) for c, s in self.images.items()}
        state = np.stack([self.joints.nearest(t) for t in times])
        return Observation(t_obs, times, images, state)


@dataclass
class Chunk:
    """The actions of one prediction still to execute, each with its due time."""

    t_obs: float
    times: np.ndarray
    actions: np.ndarray
    dropped: int = 0
    executed: int = field(default=0)

    @property
    def end(self) -> float:
        return float(self.times[-1]) if len(self.times) else self.t_obs


class ChunkScheduler:
    """Turns predictions into timed actions and decides when to ask for the next one.

    `inference_period` > 0 asks at that fixed period; 0 asks when the running chunk has only the
    expected inference latency (plus one control period) left, so the next chunk lands in time.
    """

    def __init__(self, obs_horizon: int, action_horizon: int, period: float,
                 inference_period: float = 0.0, latency_guess: float = 0.1):
        self.first = int(obs_horizon) - 1
        self.action_horizon = int(action_horizon)
        self.period = float(period)
        self.inference_period = float(inference_period)
        self.latency = float(latency_guess)
        self.chunk: Chunk | None = None
        self.last_request: float | None = None
        self.executed_times: deque[float] = deque(maxlen=1000)

    def reset(self) -> None:
        self.chunk = None
        self.last_request = None
        self.executed_times.clear()

    def accept(self, actions: np.ndarray, t_obs: float, now: float) -> Chunk:
        """The executable rows of a prediction made from the observation at `t_obs`.

        Rows `obs_horizon-1 .. obs_horizon-1+action_horizon-1` are due one period apart from
        t_obs; those due before `now` are dropped. The result replaces the running chunk.
        """
        actions = np.asarray(actions, dtype=float)
        rows = actions[self.first:self.first + self.action_horizon]
        times = t_obs + self.period * np.arange(len(rows))
        keep = times >= now
        self.advance(now)  # count the old chunk's actions that ran before the replacement
        self.chunk = Chunk(t_obs, times[keep], rows[keep], dropped=int((~keep).sum()))
        return self.chunk

    def note_request(self, now: float) -> None:
        self.last_request = now

    def note_latency(self, seconds: float) -> None:
        """Running estimate of inference latency (exponential average, quick to rise)."""
        a = 0.5 if seconds > self.latency else 0.2
        self.latency = (1 - a) * self.latency + a * float(seconds)

    def should_request(self, now: float) -> bool:
        if self.inference_period > 0:
            return self.last_request is None or now - self.last_request >= \
                self.inference_period - 1e-9
        if self.chunk is None or not len(self.chunk.times):
            return True
        return now >= self.chunk.end - self.latency - self.period

    def advance(self, now: float) -> np.ndarray | None:
        """The action due at `now` (newest row whose time has come), None before the first.

        Rows passing their due time are counted as executed (the achieved control rate).
        """
        c = self.chunk
        if c is None or not len(c.times):
            return None
        due = int(np.searchsorted(c.times, now, side='right'))
        for t in c.times[c.executed:due]:
            self.executed_times.append(float(t))
        c.executed = max(c.executed, due)
        return c.actions[due - 1].copy() if due > 0 else None

    def achieved_rate(self, now: float, window: float = 5.0) -> float:
        """Actions executed per second over the last `window` seconds."""
        recent = [t for t in self.executed_times if now - window < t <= now]
        if len(recent) < 2:
            return 0.0
        return (len(recent) - 1) / max(recent[-1] - recent[0], 1e-9)
