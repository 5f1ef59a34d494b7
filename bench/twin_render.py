"""Twin render benchmark: frames/s per camera of MujocoTwin.render (padded pinhole
render + lens distortion remap), its pinhole view and segmentation, against raw MuJoCo
rendering (mujoco.Renderer on the same model, same process, no distortion, at W x H and at the
padded size). Synthetic scene (no bench lab): arm, table, three objects, two cameras.

    .venv/bin/python bench/twin_render.py [--sizes 320x240 640x480] [--frames 60] [--out out.json]
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np
from provenance import add_out_argument, machine, write_result

os.environ.setdefault('MUJOCO_GL', 'egl')

import mujoco  # noqa: E402

from comsim_twin.backends.mujoco_backend import MujocoTwin  # noqa: E402
from comsim_twin.scene import TwinCamera, TwinObject, TwinScene  # noqa: E402

DISTORTION = np.array([-0.118, 0.084, 0.0007, -0.0005, -0.021])   # a typical webcam barrel
VIEWS = {'front': ([0.98, 0.02, 0.62], [0.32, 0.0, 0.10]),
         'side': ([0.36, -0.72, 0.50], [0.34, 0.06, 0.10])}


def _camera(name: str, width: int, height: int) -> TwinCamera:
    eye, target = (np.asarray(v, float) for v in VIEWS[name])
    z = (target - eye) / np.linalg.norm(target - eye)
    x = np.cross(z, [0.0, 0.0, 1.0])
    x /= np.linalg.norm(x)
    T = np.eye(4)
    T[:3, :3] = np.stack([x, np.cross(z, x), z], axis=1)
    T[:3, 3] = eye
    f = 0.91 * width
    K = np.array([[f, 0.0, width / 2 + 1.5], [0.0, f, height / 2 - 1.0], [0.0, 0.0, 1.0]])
    return TwinCamera(name, width, height, K, DISTORTION, T)


def scene(width: int, height: int) -> TwinScene:
    return TwinScene(table_size=[0.6, 0.5], table_center=[0.35, 0.0],
                     cameras={n: _camera(n, width, height) for n in VIEWS},
                     objects={'block_a': TwinObject('block_a', 'box', [0.0225] * 3,
                                                    [0.85, 0.15, 0.12], [0.40, -0.05, 0.0225]),
                              'block_b': TwinObject('block_b', 'box', [0.025] * 3,
                                                    [0.12, 0.35, 0.85], [0.35, 0.10, 0.025]),
                              'bottle': TwinObject('bottle', 'bottle', [0.03, 0.05],
                                                   [0.2, 0.55, 0.3], [0.48, 0.12, 0.05])})


def fps(fn, n: int) -> float:
    fn()   # warm-up (first frame allocates GL buffers)
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return n / (time.perf_counter() - t0)


def bench_size(width: int, height: int, frames: int) -> dict:
    twin = MujocoTwin()
    twin.build(scene(width, height))
    out = {}
    try:
        for cam in twin.camera_names:
            lens = twin.lens(cam)
            raw = mujoco.Renderer(twin.model, height=height, width=width)
            raw_pad = mujoco.Renderer(twin.model, height=lens.render_height,
                                      width=lens.render_width)

            def plain(r=raw, c=cam):
                r.update_scene(twin.data, camera=c)
                return r.render()

            def padded(r=raw_pad, c=cam):
                r.update_scene(twin.data, camera=c)
                return r.render()

            try:
                row = {'render_size': [lens.render_width, lens.render_height],
                       'twin_render_fps': fps(lambda c=cam: twin.render(c), frames),
                       'twin_pinhole_fps': fps(lambda c=cam: twin.render(c, distort=False),
                                               frames),
                       'twin_segmentation_fps': fps(lambda c=cam: twin.render_segmentation(c),
                                                    frames),
                       'raw_mujoco_fps': fps(plain, frames),
                       'raw_mujoco_padded_fps': fps(padded, frames)}
            finally:
                raw.close()
                raw_pad.close()
            row['ratio_twin_vs_raw'] = row['twin_render_fps'] / row['raw_mujoco_fps']
            out[cam] = {k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items()}
    finally:
        twin.close()
    return out


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--sizes', nargs='+', default=['320x240', '640x480'])
    ap.add_argument('--frames', type=int, default=60)
    add_out_argument(ap, __file__)
    args = ap.parse_args(argv)
    results = {}
    for size in args.sizes:
        w, h = (int(v) for v in size.lower().split('x'))
        results[size] = bench_size(w, h, args.frames)
        for cam, row in results[size].items():
            print(f'{size} {cam}: twin {row["twin_render_fps"]:.1f} fps, raw MuJoCo '
                  f'{row["raw_mujoco_fps"]:.1f} fps, ratio {row["ratio_twin_vs_raw"]:.2f} '
                  f'(pinhole {row["twin_pinhole_fps"]:.1f}, padded raw '
                  f'{row["raw_mujoco_padded_fps"]:.1f}, segmentation '
                  f'{row["twin_segmentation_fps"]:.1f})')
    report = {'frames_per_measure': args.frames, 'results': results}
    write_result(args.out, report, machine(mujoco=mujoco.__version__,
                                           MUJOCO_GL=os.environ.get('MUJOCO_GL', '')))
    return report


if __name__ == '__main__':
    main()
