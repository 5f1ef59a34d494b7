"""Closed-loop evaluation throughput: rollouts per minute in process vs over DDS, same run.

    .venv/bin/python bench/eval_rate.py [--checkpoint DIR] [--rollouts 8] [--dds-rollouts 2] \\
        [--workers 0] [--task move_card] [--out bench/results/eval_rate.json]

Both modes run the same checkpoint on the same layouts (seeds 1000...) of one task, with the
evaluator's shipped settings (config/evaluation.yaml: episodes and contact sheets saved). The
DDS rollouts get the sim-time budget the in-process ones had (their median timeout), so both do
the same simulated work when the policy does not succeed. Rates are given with and without
start-up (worker spawn and checkpoint load; the DDS graph's launch). The machine is shared, so
each mode's CPU seconds (every process and thread it ran, from getrusage) are recorded too:
`cpu_rollouts_per_min` = 60 x cores x rollouts / CPU seconds is the rate the mode would reach
with the cores to itself and perfect parallelism (a capacity, not a measured rate).

Without --checkpoint, a freshly initialised model of the main job's size
(config/policy_train_main_job.yaml) is saved and used: inference cost does not depend on the
weights, and an untrained policy never succeeds, so every rollout runs to its timeout (the
worst case for throughput).
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import resource
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from provenance import ROOT, add_out_argument, torch_machine, write_result

from comsim_core.robot.model import RobotModel
from comsim_policy.evaluation.config import load_config

CAMERAS = ['/cameras/front/image_raw', '/cameras/side/image_raw']


def main_job_checkpoint(path: Path) -> Path:
    """An untrained model of the main job's size, saved as the trainer saves one."""
    from comsim_policy.checkpoint import save_pretrained  # noqa: PLC0415
    from comsim_policy.config import PolicyConfig  # noqa: PLC0415
    from comsim_policy.model.policy import DiffusionPolicyModel  # noqa: PLC0415
    from comsim_policy.normalizer import PolicyNormalizer  # noqa: PLC0415

    config = PolicyConfig.from_yaml(ROOT / 'config' / 'policy_train_main_job.yaml')
    config.camera_sizes = {c: [240, 320] for c in CAMERAS}
    model = DiffusionPolicyModel(config)
    robot = RobotModel.load()
    limits = np.stack([robot.lower, robot.upper])
    model.normalizer = PolicyNormalizer.fit(limits, limits)
    return save_pretrained(model, path)


def cpu_seconds() -> float:
    """User + system CPU of this process and of its finished children (workers, graph)."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(
        resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def summary(rollouts, total_wall_s: float, cpu_s: float) -> dict:
    walls = [r.wall_s for r in rollouts]
    cores = os.cpu_count() or 1
    return {'rollouts': len(rollouts), 'successes': sum(r.success for r in rollouts),
            'total_wall_s': round(total_wall_s, 1),
            'rollouts_per_min': round(60 * len(rollouts) / total_wall_s, 2),
            'cpu_s': round(cpu_s, 1),
            'cpu_rollouts_per_min': round(60 * cores * len(rollouts) / cpu_s, 2),
            'rollout_wall_s_median': round(statistics.median(walls), 2),
            'sim_s_median': round(statistics.median(r.sim_s for r in rollouts), 2),
            'renders_median': statistics.median(r.renders for r in rollouts),
            'per_rollout': [{'seed': r.seed, 'success': r.success, 'sim_s': r.sim_s,
                             'wall_s': r.wall_s, 'cpu_s': r.cpu_s, 'renders': r.renders,
                             'chunks': r.chunks}
                            for r in rollouts]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--checkpoint', type=Path)
    parser.add_argument('--task', default='move_card')
    parser.add_argument('--region', default='id')
    parser.add_argument('--rollouts', type=int, default=8, help='in-process rollouts')
    parser.add_argument('--dds-rollouts', type=int, default=2)
    parser.add_argument('--workers', type=int, default=0, help='0 = one per core')
    add_out_argument(parser, __file__)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix='eval_rate_'))
    ckpt = args.checkpoint or main_job_checkpoint(tmp / 'main_job_untrained')
    base = dataclasses.replace(load_config(None), tasks=[args.task], regions=[args.region],
                               variants=[''], policy={'device': 'cpu'})
    info = torch_machine()

    from comsim_policy.evaluation.in_process import evaluate, worker_count  # noqa: PLC0415
    cfg = dataclasses.replace(base, mode='in_process', rollouts=args.rollouts,
                              workers=args.workers, out=str(tmp / 'in_process'))
    t0, c0 = time.monotonic(), cpu_seconds()
    local = evaluate([ckpt], cfg, log=print)
    local_wall, local_cpu = time.monotonic() - t0, cpu_seconds() - c0
    local_steady = (60 * worker_count(args.workers)
                    / statistics.mean(r.wall_s for r in local.rollouts))

    from comsim_policy.evaluation.closed_loop import evaluate as evaluate_dds  # noqa: PLC0415
    timeout_s = statistics.median(r.timeout_s for r in local.rollouts)
    t0, c0 = time.monotonic(), cpu_seconds()
    dds = evaluate_dds([ckpt], [args.task], args.dds_rollouts, (args.region,), ('',),
                       tmp / 'dds', seed=base.seed, timeout_s=timeout_s, settle_s=base.settle_s,
                       check_every_s=base.check_every_s, sheets=base.sheets, lab=base.lab,
                       policy={'device': 'cpu'}, log=print)
    dds_wall, dds_cpu = time.monotonic() - t0, cpu_seconds() - c0
    dds_steady = 60 / statistics.mean(r.wall_s for r in dds.rollouts)

    in_process = {**summary(local.rollouts, local_wall, local_cpu),
                  'workers': worker_count(args.workers),
                  'rollouts_per_min_without_startup': round(local_steady, 2)}
    over_dds = {**summary(dds.rollouts, dds_wall, dds_cpu), 'timeout_s': timeout_s,
                'rollouts_per_min_without_startup': round(dds_steady, 2)}
    result = {'checkpoint': str(ckpt), 'trained': args.checkpoint is not None,
              'task': args.task, 'region': args.region, 'in_process': in_process,
              'dds': over_dds,
              'ratio': round(in_process['rollouts_per_min'] / over_dds['rollouts_per_min'], 1),
              'ratio_without_startup': round(local_steady / dds_steady, 1),
              'ratio_cpu': round(in_process['cpu_rollouts_per_min']
                                 / over_dds['cpu_rollouts_per_min'], 1)}
    print(f"in process: {in_process['rollouts_per_min']} rollouts/min "
          f"({in_process['rollouts_per_min_without_startup']} without start-up); "
          f"DDS: {over_dds['rollouts_per_min']} ({over_dds['rollouts_per_min_without_startup']});"
          f" ratio {result['ratio']} ({result['ratio_without_startup']}); from CPU seconds: "
          f"{in_process['cpu_rollouts_per_min']} vs {over_dds['cpu_rollouts_per_min']} "
          f"({result['ratio_cpu']}x)")
    write_result(args.out, result, info)


if __name__ == '__main__':
    main()
