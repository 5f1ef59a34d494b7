"""move_card: slide a flat card into a target zone drawn on the table."""
from __future__ import annotations

import numpy as np

from comsim_bench_lab.config import ObjectConfig, RegionConfig
from comsim_bench_lab.scene import Marker
from comsim_bench_lab.tasks.base import ObjectView, Placement, Task


class MoveCard(Task):
    name = 'move_card'
    card = 'card'
    zone = 'target_zone'

    @property
    def zone_half(self) -> tuple[float, float]:
        hx, hy = self.cfg.params.get('zone_half_size', [0.06, 0.05])
        return float(hx), float(hy)

    def markers(self) -> list[Marker]:
        color = tuple(self.cfg.params.get('zone_color', [0.2, 0.75, 0.3]))
        return [Marker(self.zone, self.zone_half, color)]

    def marker_poses(self) -> dict[str, tuple[float, float, float]]:
        c = self.target['zone_center']
        return {self.zone: (c[0], c[1], 0.0)}

    def sample(self, rng: np.random.Generator, region: RegionConfig,
               objects: dict[str, ObjectConfig]) -> dict[str, Placement]:
        dmin, dmax = self.cfg.params.get('push_distance', [0.10, 0.18])
        card = objects[self.card]
        margin = float(max(card.size[0], card.size[1]))
        for _ in range(500):
            start = region.sample(rng, margin=margin * 0.5)
            goal = region.sample(rng, margin=0.0)
            if dmin <= np.linalg.norm(goal - start) <= dmax:
                break
        else:
            raise ValueError(f'move_card: region {region} cannot fit a push of {dmin}-{dmax} m')
        self.target = {'zone_center': [float(goal[0]), float(goal[1])],
                       'zone_half_size': list(self.zone_half), 'zone_yaw': 0.0}
        return {self.card: Placement(start, float(rng.uniform(-0.6, 0.6)))}

    def check_success(self, view: ObjectView, objects: dict[str, ObjectConfig],
                      table_z: float) -> tuple[bool, str]:
        pos, _ = view.pose(self.card)
        c = np.asarray(self.target['zone_center'])
        hx, hy = self.zone_half
        dx, dy = abs(pos[0] - c[0]), abs(pos[1] - c[1])
        if dx > hx or dy > hy:
            return False, (f'card centre ({dx:.3f}, {dy:.3f}) m from the zone centre, '
                           f'zone half ({hx}, {hy})')
        if pos[2] > table_z + 0.02:
            return False, 'card is not on the table'
        if not self.is_still(view, self.card):
            return False, 'card still moving'
        return True, 'card centre inside the target zone'
