"""move_card: slide a flat card into a target zone drawn on the table."""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from comsim_core.tasks.bodies import Body
from comsim_core.tasks.layout import Layout, LayoutError, Placement, Region, yaw_range
from comsim_core.tasks.markers import TableMarker
from comsim_core.tasks.state import States, is_still
from comsim_core.tasks.task import History, Params, Task, Verdict

CARD = 'card'
ZONE = 'target_zone'
ZONE_HALF = (0.06, 0.05)            # m, when the config gives none
ZONE_COLOR = (0.2, 0.75, 0.3)


def zone_half(params: Params) -> tuple[float, float]:
    hx, hy = params.get('zone_half_size', ZONE_HALF)
    return float(hx), float(hy)


def layout(rng: np.random.Generator, region: Region, params: Params,
           bodies: Mapping[str, Body]) -> Layout:
    """Card start inside the region, zone centre inside it `push_distance` away."""
    dmin, dmax = params.get('push_distance', [0.10, 0.18])
    card = bodies[CARD]
    margin = 0.5 * float(max(card.size[0], card.size[1]))
    for _ in range(1000):
        start = region.sample(rng, margin=margin)
        goal = region.sample(rng, margin=0.0)
        if dmin <= np.linalg.norm(goal - start) <= dmax:
            break
    else:
        raise LayoutError(f'move_card: region {region} cannot fit a push of {dmin}-{dmax} m')
    lo, hi = yaw_range(params, (-0.6, 0.6))
    target = {'zone_center': [float(goal[0]), float(goal[1])],
              'zone_half_size': list(zone_half(params)), 'zone_yaw': 0.0}
    return Layout({CARD: Placement(start, float(rng.uniform(lo, hi)))}, target)


def check(states: States, bodies: Mapping[str, Body], target: Mapping[str, Any],
          params: Params, history: History, table_z: float) -> Verdict:
    """Card centre inside the (axis-aligned) target zone, lying on the table, at rest."""
    card = states[CARD]
    c = target['zone_center']
    hx, hy = (float(v) for v in target.get('zone_half_size') or zone_half(params))
    dx, dy = abs(card.pos[0] - c[0]), abs(card.pos[1] - c[1])
    if dx > hx or dy > hy:
        return False, (f'card centre ({dx:.3f}, {dy:.3f}) m from the zone centre, '
                       f'zone half ({hx}, {hy})')
    if card.pos[2] > table_z + 0.02:
        return False, 'card is not on the table'
    if not is_still(card):
        return False, 'card still moving'
    return True, 'card centre inside the target zone'


def markers(params: Params) -> tuple[TableMarker, ...]:
    color = tuple(float(v) for v in params.get('zone_color', ZONE_COLOR))
    return (TableMarker(ZONE, zone_half(params), color, 'zone_half_size'),)


def marker_poses(target: Mapping[str, Any]) -> dict[str, tuple[float, float, float]]:
    c = target['zone_center']
    return {ZONE: (float(c[0]), float(c[1]), float(target.get('zone_yaw', 0.0)))}


def clear_path(lay: Layout) -> tuple[np.ndarray, np.ndarray]:
    """The push sweeps from the card's start to the zone centre."""
    return np.asarray(lay.placements[CARD].xy, float), np.asarray(lay.target['zone_center'])


TASK = Task(
    name='move_card', objects=(CARD,),
    goal='slide the flat card so its centre ends inside the target zone',
    program=({'primitive': 'push', 'object': CARD},),
    layout=layout, check=check, markers=markers, marker_poses=marker_poses,
    clear_path=clear_path)
