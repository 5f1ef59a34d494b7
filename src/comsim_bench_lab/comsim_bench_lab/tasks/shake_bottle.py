"""shake_bottle: grasp, lift >= 5 cm, shake (>= 3 oscillations), set down upright.

Lift height and oscillations are tracked during the episode (update()); an oscillation is
one full back-and-forth of the lifted bottle's horizontal velocity (hysteresis on its sign).
"""
from __future__ import annotations

import numpy as np

from comsim_bench_lab.config import ObjectConfig, RegionConfig
from comsim_bench_lab.tasks.base import ObjectView, Placement, Task, tilt_of


class ShakeBottle(Task):
    name = 'shake_bottle'
    bottle = 'bottle'

    def __init__(self, cfg):
        super().__init__(cfg)
        self.min_lift = float(cfg.params.get('min_lift', 0.05))
        self.min_oscillations = int(cfg.params.get('min_oscillations', 3))
        self.vel_threshold = float(cfg.params.get('shake_velocity', 0.08))
        self.reset_tracking()

    def reset_tracking(self) -> None:
        self.rest_z: float | None = None
        self.max_lift = 0.0
        self._sign = np.zeros(2)
        self._reversals = np.zeros(2, dtype=int)

    @property
    def oscillations(self) -> int:
        return int(self._reversals.max() // 2)

    def sample(self, rng: np.random.Generator, region: RegionConfig,
               objects: dict[str, ObjectConfig]) -> dict[str, Placement]:
        r = float(objects[self.bottle].size[0])
        self.target = {'min_lift': self.min_lift, 'min_oscillations': self.min_oscillations}
        return {self.bottle: Placement(region.sample(rng, margin=r),
                                       float(rng.uniform(-np.pi, np.pi)))}

    def update(self, view: ObjectView, table_z: float) -> None:
        pos, _ = view.pose(self.bottle)
        if self.rest_z is None:
            self.rest_z = float(pos[2])
        lift = float(pos[2]) - self.rest_z
        self.max_lift = max(self.max_lift, lift)
        if lift < 0.03:
            return
        lin, _ = view.velocity(self.bottle)
        for axis in range(2):
            v = lin[axis]
            if abs(v) < self.vel_threshold:
                continue
            s = np.sign(v)
            if self._sign[axis] != 0 and s != self._sign[axis]:
                self._reversals[axis] += 1
            self._sign[axis] = s

    def check_success(self, view: ObjectView, objects: dict[str, ObjectConfig],
                      table_z: float) -> tuple[bool, str]:
        obj = objects[self.bottle]
        pos, quat = view.pose(self.bottle)
        if self.max_lift < self.min_lift:
            return False, f'bottle lifted {self.max_lift:.3f} m, needs {self.min_lift}'
        if self.oscillations < self.min_oscillations:
            return False, f'{self.oscillations} shake oscillations, needs {self.min_oscillations}'
        tilt = np.degrees(tilt_of(quat))
        if tilt > 15.0:
            return False, f'bottle tilted {tilt:.1f} deg'
        if abs(pos[2] - table_z - obj.size[1]) > 0.01:
            return False, 'bottle is not standing on the table'
        if not self.is_still(view, self.bottle):
            return False, 'bottle still moving'
        return True, 'bottle lifted, shaken and set down upright'
