"""stack_blocks: pick the top block and place it on the bottom block."""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from comsim_core.tasks.bodies import Body, footprint, half_height
from comsim_core.tasks.layout import Layout, Placement, Region, sample_separated, yaw_range
from comsim_core.tasks.state import States, is_still
from comsim_core.tasks.task import History, Params, Task, Verdict

TOP, BOTTOM = 'block_top', 'block_bottom'


def layout(rng: np.random.Generator, region: Region, params: Params,
           bodies: Mapping[str, Body]) -> Layout:
    """Both blocks apart by `min_gap` beyond their footprints, yaw within `yaw`."""
    radii = [footprint(bodies[TOP]), footprint(bodies[BOTTOM])]
    p_top, p_bottom = sample_separated(rng, region, radii, float(params.get('min_gap', 0.03)))
    lo, hi = yaw_range(params, (-np.pi / 4, np.pi / 4))
    return Layout({TOP: Placement(p_top, float(rng.uniform(lo, hi))),
                   BOTTOM: Placement(p_bottom, float(rng.uniform(lo, hi)))},
                  {'place_on': BOTTOM})


def check(states: States, bodies: Mapping[str, Body], target: Mapping[str, Any],
          params: Params, history: History, table_z: float) -> Verdict:
    """Top block resting centred on the bottom block, which stands on the table."""
    top, bottom = bodies[TOP], bodies[BOTTOM]
    s_top, s_bot = states[TOP], states[BOTTOM]
    half = min(top.size[0], bottom.size[0])
    xy_off = float(np.linalg.norm(s_top.pos[:2] - s_bot.pos[:2]))
    want_z = s_bot.pos[2] + half_height(bottom) + half_height(top)
    if xy_off >= half:
        return False, f'top block {xy_off:.3f} m off the bottom block centre (limit {half:.3f})'
    if abs(s_top.pos[2] - want_z) > 0.01:
        return False, f'top block height {s_top.pos[2]:.3f} m, stacked would be {want_z:.3f}'
    if abs(s_bot.pos[2] - table_z - half_height(bottom)) > 0.01:
        return False, 'bottom block is not on the table'
    if not (is_still(s_top) and is_still(s_bot)):
        return False, 'blocks still moving'
    return True, 'top block stacked on the bottom block'


TASK = Task(
    name='stack_blocks', objects=(TOP, BOTTOM),
    goal='put block_top on top of block_bottom, centred and at rest',
    program=({'primitive': 'stack', 'object': TOP, 'on': BOTTOM},),
    layout=layout, check=check)
