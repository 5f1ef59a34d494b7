"""Generation throughput: successful sim episodes per minute with 1 and 2 workers.

    .venv/bin/python bench/generation_throughput.py [--episodes 6] [--tasks move_card ...]
        [--workers 1 2] [--image-scale 1.0] [--out bench/results/generation_throughput.json]

The base scene uses the bench lab's true cameras (a benchmark may read ground truth; the twin
code never does). Writes JSON with the command, the machine and per-worker-count results.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
from pathlib import Path

from provenance import add_out_argument, machine, use_fixtures, write_result

os.environ.setdefault('MUJOCO_GL', 'egl')
from comsim_twin.generation.config import GenerationConfig  # noqa: E402
from comsim_twin.generation.runner import generate  # noqa: E402

use_fixtures()
from fixtures.twin_scenes import base_scene  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--episodes', type=int, default=6)
    ap.add_argument('--tasks', nargs='+', default=['stack_blocks', 'move_card', 'shake_bottle'])
    ap.add_argument('--workers', type=int, nargs='+', default=[1, 2])
    ap.add_argument('--image-scale', type=float, default=1.0)
    add_out_argument(ap, __file__)
    args = ap.parse_args()
    cfg = GenerationConfig.load().with_overrides(image_scale=args.image_scale)
    results = []
    for task in args.tasks:
        for w in args.workers:
            tmp = Path(tempfile.mkdtemp(prefix='gen_bench_'))
            try:
                rep = generate(base_scene(task), task, args.episodes, tmp, seed=0, workers=w,
                               config=cfg, progress=False)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
            row = {'task': task, 'workers': w, 'episodes': rep.made, 'successes': rep.successes,
                   'wall_s': round(rep.wall_s, 2),
                   'successful_per_min': round(60 * rep.successes / rep.wall_s, 2),
                   'sim_s_per_wall_s': round(sum(e.sim_s for e in rep.episodes) / rep.wall_s,
                                             2)}
            print(json.dumps(row), flush=True)
            results.append(row)
    for task in args.tasks:
        rows = {r['workers']: r for r in results if r['task'] == task}
        if 1 in rows and 2 in rows:
            rows[2]['scaling_vs_1'] = round(rows[2]['successful_per_min']
                                            / max(rows[1]['successful_per_min'], 1e-9), 2)
    write_result(args.out, {'image_scale': args.image_scale, 'results': results}, machine())


if __name__ == '__main__':
    main()
