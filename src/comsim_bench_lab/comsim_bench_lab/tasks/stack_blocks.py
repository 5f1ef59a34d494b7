"""stack_blocks: pick the top block and place it on the bottom block."""
from __future__ import annotations

import numpy as np

from comsim_bench_lab.config import ObjectConfig, RegionConfig
from comsim_bench_lab.tasks.base import ObjectView, Placement, Task, footprint, sample_separated


class StackBlocks(Task):
    name = 'stack_blocks'
    top, bottom = 'block_top', 'block_bottom'

    def sample(self, rng: np.random.Generator, region: RegionConfig,
               objects: dict[str, ObjectConfig]) -> dict[str, Placement]:
        radii = [footprint(objects[self.top]), footprint(objects[self.bottom])]
        gap = float(self.cfg.params.get('min_gap', 0.06))
        p_top, p_bottom = sample_separated(rng, region, radii, gap)
        self.target = {'place_on': self.bottom}
        return {self.top: Placement(p_top, float(rng.uniform(-np.pi / 4, np.pi / 4))),
                self.bottom: Placement(p_bottom, float(rng.uniform(-np.pi / 4, np.pi / 4)))}

    def check_success(self, view: ObjectView, objects: dict[str, ObjectConfig],
                      table_z: float) -> tuple[bool, str]:
        top, bottom = objects[self.top], objects[self.bottom]
        p_top, _ = view.pose(self.top)
        p_bot, _ = view.pose(self.bottom)
        half = min(top.size[0], bottom.size[0])
        xy_off = float(np.linalg.norm(p_top[:2] - p_bot[:2]))
        want_z = p_bot[2] + bottom.half_height + top.half_height
        if xy_off >= half:
            return False, f'top block {xy_off:.3f} m off the bottom block centre (limit {half:.3f})'
        if abs(p_top[2] - want_z) > 0.01:
            return False, f'top block height {p_top[2]:.3f} m, stacked would be {want_z:.3f}'
        if abs(p_bot[2] - table_z - bottom.half_height) > 0.01:
            return False, 'bottom block is not on the table'
        if not (self.is_still(view, self.top) and self.is_still(view, self.bottom)):
            return False, 'blocks still moving'
        return True, 'top block stacked on the bottom block'
