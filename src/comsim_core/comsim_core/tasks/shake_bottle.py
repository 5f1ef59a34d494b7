"""shake_bottle: grasp, lift >= min_lift, shake (>= min_oscillations), set down upright.

Lift height and oscillations are a history (ShakeHistory); an oscillation is one full
back-and-forth of the lifted bottle's horizontal velocity (hysteresis on its sign).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from comsim_core.geometry import tilt_of
from comsim_core.tasks.bodies import Body, footprint, half_height
from comsim_core.tasks.layout import Layout, Placement, Region, yaw_range
from comsim_core.tasks.state import States, is_still
from comsim_core.tasks.task import History, Params, Task, Verdict

BOTTLE = 'bottle'
SHAKE_FROM_LIFT = 0.03   # m: velocity reversals count only once the bottle is this high
MAX_TILT_DEG = 15.0


def min_lift(params: Params) -> float:
    return float(params.get('min_lift', 0.05))


def min_oscillations(params: Params) -> int:
    return int(params.get('min_oscillations', 3))


@dataclass
class ShakeHistory:
    """Highest lift above the resting height and side-to-side velocity reversals while lifted
    (one oscillation = two reversals along the same horizontal axis)."""

    velocity_threshold: float = 0.08      # m/s: slower moves do not count as a swing
    rest_z: float | None = None
    max_lift: float = 0.0
    _sign: np.ndarray = field(default_factory=lambda: np.zeros(2))
    _reversals: np.ndarray = field(default_factory=lambda: np.zeros(2, dtype=int))

    @property
    def oscillations(self) -> int:
        return int(self._reversals.max() // 2)

    def update(self, states: States, table_z: float) -> None:
        s = states[BOTTLE]
        z = float(s.pos[2])
        if self.rest_z is None:
            self.rest_z = z
        lift = z - self.rest_z
        self.max_lift = max(self.max_lift, lift)
        if lift < SHAKE_FROM_LIFT:
            return
        for axis in range(2):
            v = float(s.lin_vel[axis])
            if abs(v) < self.velocity_threshold:
                continue
            sign = np.sign(v)
            if self._sign[axis] != 0 and sign != self._sign[axis]:
                self._reversals[axis] += 1
            self._sign[axis] = sign


def history(params: Params) -> ShakeHistory:
    return ShakeHistory(float(params.get('shake_velocity', 0.08)))


def layout(rng: np.random.Generator, region: Region, params: Params,
           bodies: Mapping[str, Body]) -> Layout:
    xy = region.sample(rng, margin=footprint(bodies[BOTTLE]))
    lo, hi = yaw_range(params, (-np.pi, np.pi))
    return Layout({BOTTLE: Placement(xy, float(rng.uniform(lo, hi)))},
                  {'min_lift': min_lift(params), 'min_oscillations': min_oscillations(params)})


def check(states: States, bodies: Mapping[str, Body], target: Mapping[str, Any],
          params: Params, history: History, table_z: float) -> Verdict:
    """Lifted high enough, shaken often enough, then standing upright on the table at rest."""
    if not isinstance(history, ShakeHistory):
        raise TypeError(f'shake_bottle is judged on its ShakeHistory, got {history!r}')
    need_lift, need_osc = min_lift(params), min_oscillations(params)
    s = states[BOTTLE]
    if history.max_lift < need_lift:
        return False, f'bottle lifted {history.max_lift:.3f} m, needs {need_lift}'
    if history.oscillations < need_osc:
        return False, f'{history.oscillations} shake oscillations, needs {need_osc}'
    tilt = np.degrees(tilt_of(s.quat))
    if tilt > MAX_TILT_DEG:
        return False, f'bottle tilted {tilt:.1f} deg'
    if abs(s.pos[2] - table_z - half_height(bodies[BOTTLE])) > 0.01:
        return False, 'bottle is not standing on the table'
    if not is_still(s):
        return False, 'bottle still moving'
    return True, 'bottle lifted, shaken and set down upright'


TASK = Task(
    name='shake_bottle', objects=(BOTTLE,),
    goal='pick up the bottle, lift it >= 5 cm, shake it side to side >= 3 times, '
         'set it down upright',
    program=({'primitive': 'grasp', 'object': BOTTLE}, {'primitive': 'lift'},
             {'primitive': 'shake'}, {'primitive': 'place'}),
    layout=layout, check=check, history=history)
