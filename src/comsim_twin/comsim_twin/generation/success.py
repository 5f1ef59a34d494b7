"""Twin-side success predicates, from object states the twin backend reports.

The twin cannot ask the lab whether an episode succeeded, so it states each task's goal in
geometry: stacked, card in zone, bottle lifted-shaken-upright. Monitors see every control tick
(`update`) because shaking is a history, not a final state.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from comsim_twin.scene import TwinObject

STILL_LIN = 0.02   # m/s
STILL_ANG = 0.3    # rad/s


def half_height(o: TwinObject) -> float:
    return float(o.size[2] if o.shape == 'box' else o.size[1])


def tilt_deg(quat) -> float:
    """Angle between the body z axis and the world z axis."""
    w, x, y, z = quat
    return float(np.degrees(np.arccos(np.clip(1.0 - 2.0 * (x * x + y * y), -1.0, 1.0))))


def is_still(state: dict) -> bool:
    return bool(np.linalg.norm(state['lin_vel']) < STILL_LIN
                and np.linalg.norm(state['ang_vel']) < STILL_ANG)


def stacked(top: dict, bottom: dict, top_obj: TwinObject, bottom_obj: TwinObject,
            table_z: float = 0.0) -> tuple[bool, str]:
    """Top block resting centred on the bottom block, which stands on the table."""
    half = min(top_obj.size[0], bottom_obj.size[0])
    off = float(np.linalg.norm(np.asarray(top['pos'][:2]) - np.asarray(bottom['pos'][:2])))
    want_z = bottom['pos'][2] + half_height(bottom_obj) + half_height(top_obj)
    if off >= half:
        return False, f'top block {off:.3f} m off the bottom block centre (limit {half:.3f})'
    if abs(top['pos'][2] - want_z) > 0.01:
        return False, f'top block at z {top["pos"][2]:.3f} m, stacked would be {want_z:.3f}'
    if abs(bottom['pos'][2] - table_z - half_height(bottom_obj)) > 0.01:
        return False, 'bottom block is not on the table'
    if not (is_still(top) and is_still(bottom)):
        return False, 'blocks still moving'
    return True, 'top block stacked on the bottom block'


def card_in_zone(card: dict, zone_center, zone_half, table_z: float = 0.0) -> tuple[bool, str]:
    """Card centre inside the (axis-aligned) target zone, lying on the table, at rest."""
    dx = abs(card['pos'][0] - zone_center[0])
    dy = abs(card['pos'][1] - zone_center[1])
    if dx > zone_half[0] or dy > zone_half[1]:
        return False, f'card centre ({dx:.3f}, {dy:.3f}) m from the zone centre, zone half ' \
                      f'{list(zone_half)}'
    if card['pos'][2] > table_z + 0.02:
        return False, 'card is not on the table'
    if not is_still(card):
        return False, 'card still moving'
    return True, 'card centre inside the target zone'


@dataclass
class ShakeTracker:
    """Lift height and side-to-side oscillations of the lifted bottle (sign changes of its
    horizontal velocity above a threshold; one oscillation = two reversals)."""

    min_lift: float = 0.05
    min_oscillations: int = 3
    velocity_threshold: float = 0.08
    rest_z: float | None = None
    max_lift: float = 0.0
    _sign: np.ndarray = field(default_factory=lambda: np.zeros(2))
    _reversals: np.ndarray = field(default_factory=lambda: np.zeros(2, dtype=int))

    @property
    def oscillations(self) -> int:
        return int(self._reversals.max() // 2)

    def update(self, state: dict) -> None:
        z = float(state['pos'][2])
        if self.rest_z is None:
            self.rest_z = z
        lift = z - self.rest_z
        self.max_lift = max(self.max_lift, lift)
        if lift < 0.6 * self.min_lift:
            return
        for axis in range(2):
            v = float(state['lin_vel'][axis])
            if abs(v) < self.velocity_threshold:
                continue
            s = np.sign(v)
            if self._sign[axis] != 0 and s != self._sign[axis]:
                self._reversals[axis] += 1
            self._sign[axis] = s


def bottle_shaken(state: dict, bottle: TwinObject, tracker: ShakeTracker,
                  table_z: float = 0.0) -> tuple[bool, str]:
    if tracker.max_lift < tracker.min_lift:
        return False, f'bottle lifted {tracker.max_lift:.3f} m, needs {tracker.min_lift}'
    if tracker.oscillations < tracker.min_oscillations:
        return False, (f'{tracker.oscillations} shake oscillations, needs '
                       f'{tracker.min_oscillations}')
    tilt = tilt_deg(state['quat'])
    if tilt > 15.0:
        return False, f'bottle tilted {tilt:.1f} deg'
    if abs(state['pos'][2] - table_z - half_height(bottle)) > 0.01:
        return False, 'bottle is not standing on the table'
    if not is_still(state):
        return False, 'bottle still moving'
    return True, 'bottle lifted, shaken and set down upright'


class SuccessMonitor:
    """Per-episode success of one task: update() each control tick, check() at the end."""

    def __init__(self, task: str, objects: dict[str, TwinObject], target: dict,
                 table_z: float = 0.0):
        if task not in ('stack_blocks', 'move_card', 'shake_bottle'):
            raise ValueError(f'no success predicate for task {task!r}')
        self.task, self.objects, self.target, self.table_z = task, objects, target, table_z
        self.tracker = ShakeTracker(float(target.get('min_lift', 0.05)),
                                    int(target.get('min_oscillations', 3)))

    def update(self, states: dict[str, dict]) -> None:
        if self.task == 'shake_bottle':
            self.tracker.update(states['bottle'])

    def check(self, states: dict[str, dict]) -> tuple[bool, str]:
        o, z = self.objects, self.table_z
        if self.task == 'stack_blocks':
            return stacked(states['block_top'], states['block_bottom'], o['block_top'],
                           o['block_bottom'], z)
        if self.task == 'move_card':
            return card_in_zone(states['card'], self.target['zone_center'],
                                self.target['zone_half_size'], z)
        return bottle_shaken(states['bottle'], o['bottle'], self.tracker, z)
