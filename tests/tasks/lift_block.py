"""lift_block: a fourth task defined outside comsim_core, to show what a new task takes (this
module plus its config sections). Grasp the block, lift it and hold it at least `min_lift`
above the table. Test-only: the lab and the generation configs do not list it."""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from comsim_core.tasks.bodies import Body, footprint, half_height
from comsim_core.tasks.layout import Layout, Placement, Region, yaw_range
from comsim_core.tasks.state import States, is_still
from comsim_core.tasks.task import History, Params, Task, Verdict

BLOCK = 'block'


def layout(rng: np.random.Generator, region: Region, params: Params,
           bodies: Mapping[str, Body]) -> Layout:
    xy = region.sample(rng, margin=footprint(bodies[BLOCK]))
    lo, hi = yaw_range(params, (-np.pi / 4, np.pi / 4))
    return Layout({BLOCK: Placement(xy, float(rng.uniform(lo, hi)))}, {})


def check(states: States, bodies: Mapping[str, Body], target: Mapping[str, Any],
          params: Params, history: History, table_z: float) -> Verdict:
    block = states[BLOCK]
    lift = float(block.pos[2] - table_z - half_height(bodies[BLOCK]))
    need = float(params.get('min_lift', 0.05))
    if lift < need:
        return False, f'block {lift:.3f} m above its resting height, needs {need}'
    if not is_still(block):
        return False, 'block still moving'
    return True, 'block held above the table'


TASK = Task(
    name='lift_block', objects=(BLOCK,),
    goal='pick up the block and hold it at least 5 cm above the table',
    program=({'primitive': 'grasp', 'object': BLOCK}, {'primitive': 'lift', 'height': 0.1}),
    layout=layout, check=check)
