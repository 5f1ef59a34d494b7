"""The generated layout as bench-lab objects: the episode's shapes, sizes, colours and poses."""
from __future__ import annotations

from typing import Any

import numpy as np

from comsim_bench_lab.config import ObjectConfig

from .errors import NotGeneratedError

NECK_FRACTION = (0.4, 0.3)    # bottle neck radius, half height vs the body's (the twin's rule)
DISTRACTOR_MASS, DISTRACTOR_FRICTION = 0.05, 1.0


def lab_objects(layout: dict[str, Any], task_objects: dict[str, ObjectConfig],
                where: str) -> tuple[dict[str, ObjectConfig], dict[str, tuple[Any, Any]]]:
    """Bench-lab objects and initial poses from a generated layout.

    Shape, size and colour come from the episode; mass and friction from the bench lab's object
    of the same name (the real object), defaults for distractors. A twin 'bottle' is a cylinder
    with a neck: size[2:4] when given, else the bench bottle's neck scaled to the body, else the
    twin's default ratios.
    """
    objects, poses = {}, {}
    for name, o in layout.items():
        try:
            shape, size = str(o['shape']), [float(v) for v in o['size']]
            color = [float(v) for v in o['color']][:3]
            pos, quat = [float(v) for v in o['pos']], [float(v) for v in o['quat']]
        except (KeyError, TypeError, ValueError) as exc:
            raise NotGeneratedError(f'{where}: randomisation.objects.{name} needs shape, size, '
                                    f'color, pos and quat ({exc!r})') from None
        if len(pos) != 3 or len(quat) != 4 or len(color) != 3:
            raise NotGeneratedError(f'{where}: randomisation.objects.{name}: pos needs 3 values, '
                                    f'quat 4, color 3')
        real = task_objects.get(name)
        neck = None
        if shape == 'box' and len(size) >= 3:
            size = size[:3]
        elif shape == 'cylinder' and len(size) >= 2:
            size = size[:2]
        elif shape == 'bottle' and len(size) >= 2:
            shape = 'cylinder'
            if len(size) >= 4:
                neck = size[2:4]
            elif real is not None and real.neck is not None:
                neck = [real.neck[0] * size[0] / real.size[0],
                        real.neck[1] * size[1] / real.size[-1]]
            else:
                neck = [NECK_FRACTION[0] * size[0], NECK_FRACTION[1] * size[1]]
            size = size[:2]
        else:
            raise NotGeneratedError(f'{where}: randomisation.objects.{name}: shape {shape!r} with '
                                    f'size {size} is not a box (3), cylinder (2) or bottle (2/4)')
        mass = real.mass if real is not None else DISTRACTOR_MASS
        friction = real.friction if real is not None else DISTRACTOR_FRICTION
        objects[name] = ObjectConfig(name, shape, np.array(size), np.array(color), mass,
                                     friction, None if neck is None else np.array(neck, float))
        poses[name] = (pos, quat)
    return objects, poses
