"""The bench lab's cameras at the sim frames' sizes."""
from __future__ import annotations

import copy

from comsim_bench_lab.config import CameraConfig, LabConfig

from .errors import CameraMismatchError


def lab_config_for(config: LabConfig, sizes: dict[str, tuple[int, int]]) -> LabConfig:
    """``config`` with only the given cameras, each at the given (width, height).

    A camera whose size differs is rescaled (intrinsics scaled as the twin's ``image_scale``
    does) when the size is a uniformly scaled copy of the bench camera's; otherwise
    CameraMismatchError.
    """
    missing = [c for c in sizes if c not in config.cameras]
    if missing:
        raise CameraMismatchError(f'sim cameras {missing} are not bench-lab cameras '
                                  f'{sorted(config.cameras)}')
    out = copy.copy(config)
    out.cameras = {}
    for name, (w, h) in sizes.items():
        cam: CameraConfig = copy.deepcopy(config.cameras[name])
        if (w, h) != (cam.width, cam.height):
            sx, sy = w / cam.width, h / cam.height
            if abs(sx - sy) > 0.5 / cam.width + 0.5 / cam.height + 1e-9:
                raise CameraMismatchError(
                    f'camera {name!r}: sim frames are {w}x{h}, the bench-lab camera is '
                    f'{cam.width}x{cam.height}; not a scaled copy (aspect ratio differs), '
                    f'so the bench lab cannot render the same view at that size')
            cam.fx, cam.fy = cam.fx * sx, cam.fy * sy
            cam.cx, cam.cy = (cam.cx + 0.5) * sx - 0.5, (cam.cy + 0.5) * sy - 0.5
            cam.width, cam.height = int(w), int(h)
        out.cameras[name] = cam
    return out
