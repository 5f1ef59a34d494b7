"""The policy capability gate: can the recipe learn a bench task when its data covers it?

    .venv/bin/python bench/policy_gate.py --task move_card --work /work/gate \\
        [--scene TWIN_SCENE.yaml] [--episodes 200] [--train-minutes 40] [--rollouts 40] \\
        [--real DIR_OF_RECORDED_DEMOS] [--until data|train]

Without ``--scene`` generation starts from the lab's true cameras and the measured object sheet
(``fixtures.twin_scenes.base_scene``): the gate measures whether the policy can learn, and the
lab films (and judges) every trajectory itself, so the twin's calibration error only costs
rejected trajectories here.

Stages, each resumable (a rerun skips what is on disk):
1. ``comsim-twin-generate``: trajectories laid out over the twin's ``workspace`` region (the
   arm's reachable table area, stated by the twin's config), failures discarded; sim frames at
   ``--sim-image-scale`` (the gate never trains on them: small ones save disk);
2. ``comsim-bench-lab-ground-truth``: the bench lab films each one at the policy's 10 Hz, at
   its cameras' own size;
   only episodes whose filmed motion passes the lab's own success check count as successes
   (and training reads only successes);
3. ``comsim-policy-train`` with ``config/policy_train.yaml`` on ``--episodes`` of them, for a
   wall-clock budget: the trainer measures its own step rate, validation included, and fits
   ``max_steps`` to end in time (the learning-rate schedule follows the final count);
4. ``comsim-policy-eval`` in process: ``--rollouts`` per split (``id``, ``ood``) on the bench lab.
With ``--real`` a second policy is trained on those recorded demonstrations with the same
recipe and budget (at the same time, the cores shared between them), and evaluated on the same
seeds. The result (counts, timings, success table with Wilson intervals) goes to ``--out``.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from provenance import ROOT, add_out_argument, torch_machine, use_fixtures, write_result
from rollout_failures import by_cell, cell_failures

from comsim_core.experiment import table

BIN = Path(sys.executable).parent
STARTUP_S = 10              # the training process's imports, before its budget clock starts


def run(cmd: list[str], log: Path, threads: int | None = None) -> None:
    """Run one stage's command (no shell), its output appended to ``log``; fail loudly.
    ``threads`` sets the command's torch threads (``OMP_NUM_THREADS``)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    print('$', ' '.join(cmd), flush=True)
    with log.open('a') as fh:
        fh.write(f'$ {" ".join(cmd)}\n')
        fh.flush()
        env = None if threads is None else {**os.environ, 'OMP_NUM_THREADS': str(threads)}
        res = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, cwd=ROOT, env=env)
    if res.returncode != 0:
        sys.exit(f'{cmd[0]} failed (exit {res.returncode}); see {log}')


def successes(gt_dir: Path) -> tuple[int, int]:
    """(filmed, successful) ground-truth episodes under ``gt_dir``."""
    from comsim_core.episodes import find_episodes
    from comsim_core.episodes.sidecar import counts_as_success, read_sidecar

    paths = find_episodes(gt_dir) if gt_dir.exists() else []
    return len(paths), sum(bool(counts_as_success(read_sidecar(p) or {})) for p in paths)


def film(sims: list[Path], out: Path, wanted: int, log: Path, batch: int = 10) -> None:
    """Film the generated episodes in order, a batch at a time, until ``wanted`` of them pass
    the lab's check (already filmed ones are skipped by the tool), at the bench cameras' own
    size whatever size the sim frames were generated at."""
    for i in range(0, len(sims), batch):
        if successes(out)[1] >= wanted:
            return
        run([str(BIN / 'comsim-bench-lab-ground-truth'), *map(str, sims[i:i + batch]),
             '--out', str(out), '--rate-hz', '10', '--no-positions', '--native-size'], log)


def warm_cache(config: Path, data: list[str], cache: Path) -> int:
    """Decode every training episode into the frame cache before the training clock starts
    (decoding is the data stage's cost, not training's); returns the episodes decoded."""
    from comsim_core.episodes import find_episodes
    from comsim_policy.config import PolicyConfig
    from comsim_policy.data.cache import FrameCache
    from comsim_policy.training.data_setup import DataSpec

    frames = FrameCache(cache, PolicyConfig.from_yaml(config))
    for spec in map(DataSpec.parse, data):
        for path in find_episodes(spec.path):
            frames.get(path, spec.source)
    return frames.misses


def recipe(base: Path, work: Path, name: str, counts: dict[str, int], union: list[str]) -> Path:
    """The recipe ``base`` with this arm's episode counts (``mixture_counts``) and the
    normaliser fitted on the union of every arm's motion (``normalization_data``)."""
    from comsim_policy.config import PolicyConfig

    config = PolicyConfig.from_yaml(base)
    config.train.mixture_counts = dict(counts)
    config.train.normalization_data = list(union)
    path = work / f'policy_train_{name}.yaml'
    path.parent.mkdir(parents=True, exist_ok=True)
    config.to_yaml(path)
    return path


def train(config: Path, data: list[str], out: Path, task: str, minutes: float, cache: Path,
          log: Path, steps: int | None = None, threads: int = 1) -> dict:
    """Train within ``minutes`` of wall time: the trainer fits its step count to the rate it
    measures on itself, validation and checkpoints included (``--time-budget-s``); ``steps``
    fixes the count instead. A resumed run gets the budget afresh. ``threads``: torch threads
    of the training process (the cores this arm has)."""
    base = [str(BIN / 'comsim-policy-train'), '--config', str(config),
            '--data', *data, '--out', str(out), '--tasks', task, '--cache-dir', str(cache)]
    if (out / 'gate_training.json').exists():      # trained by an earlier run
        return json.loads((out / 'gate_training.json').read_text())
    t0 = time.monotonic()
    resume = ['--resume'] if (out / 'training_state').exists() else []
    limit = (['--max-steps', str(steps)] if steps
             else ['--time-budget-s', f'{minutes * 60 - STARTUP_S:g}'])
    run([*base, *resume, *limit], log, threads)
    rows = [json.loads(x) for x in (out / 'log.jsonl').read_text().splitlines()]
    summary = {'steps': rows[-1]['step'], 'threads': threads,
               'wall_s': round(time.monotonic() - t0, 1), 'budget_s': minutes * 60}
    (out / 'gate_training.json').write_text(json.dumps(summary))
    return summary


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--scene', type=Path, default=None,
                    help='twin scene YAML for generation (default: the lab\'s base scene)')
    ap.add_argument('--task', default='move_card')
    ap.add_argument('--work', type=Path, default=ROOT / 'output' / 'policy_gate')
    ap.add_argument('--episodes', type=int, default=200, help='ground-truth episodes to train on')
    ap.add_argument('--extra', type=int, default=30, help='generated beyond --episodes, for '
                    'the lab check to reject')
    ap.add_argument('--seed', type=int, default=5000, help='first generation seed')
    ap.add_argument('--sim-image-scale', type=float, default=0.25,
                    help='sim frames\' size vs the twin cameras\' (the gate trains on the lab\'s '
                         'filming, at full size; small sim frames save ~85 MB an episode)')
    ap.add_argument('--train-minutes', type=float, default=40.0)
    ap.add_argument('--train-steps', type=int, default=None,
                    help='training steps (default: as many as fit --train-minutes)')
    ap.add_argument('--rollouts', type=int, default=40, help='per split (id, ood)')
    ap.add_argument('--eval-seed', type=int, default=1000)
    ap.add_argument('--real', type=Path, default=None, help='recorded demos: train a second '
                    'policy on them with the same recipe and budget')
    ap.add_argument('--config', type=Path, default=ROOT / 'config/policy_train.yaml',
                    help='the recipe to train with')
    ap.add_argument('--label', default='', help='suffix of this recipe\'s checkpoint and '
                    'evaluation folders (several recipes on the same data)')
    ap.add_argument('--until', choices=('data', 'train', 'eval'), default='eval',
                    help='stop after this stage (a later run resumes)')
    add_out_argument(ap, __file__)
    args = ap.parse_args()
    if args.label and args.out == ap.get_default('out'):   # a labelled recipe keeps its own file
        args.out = args.out.with_name(f'policy_gate{args.label}.json')
    work = args.work / args.task
    logs = args.work / 'logs'
    timings: dict[str, float] = {}
    if args.scene is None:
        use_fixtures()
        from fixtures.twin_scenes import base_scene

        args.scene = base_scene(args.task).save(work / 'base_scene.yaml')

    t = time.monotonic()
    run([str(BIN / 'comsim-twin-generate'), '--scene', str(args.scene), '--task', args.task,
         '--episodes', str(args.episodes + args.extra), '--out', str(work / 'sim'),
         '--region', 'workspace', '--failures', 'discard', '--seed', str(args.seed),
         '--image-scale', str(args.sim_image_scale)],
        logs / 'generate.log')
    timings['generate_s'] = time.monotonic() - t
    t = time.monotonic()
    film(sorted((work / 'sim').glob('episode_*')), work / 'gt', args.episodes,
         logs / 'ground_truth.log')
    timings['ground_truth_s'] = time.monotonic() - t
    filmed, ok = successes(work / 'gt')
    if ok < args.episodes:
        print(f'only {ok} of {filmed} filmed episodes pass the lab check; training on them')

    arms = {'gt': ([f'{work / "gt"}:gt'], {'gt': min(ok, args.episodes)})}
    # the filmed trajectories' joint data: the sim episodes read fast; where only their
    # sidecars were kept (bags deleted for disk), the filmed episodes hold the same motions
    union = [f'{work / "sim"}:sim'] if next((work / 'sim').rglob('*.mcap'), None) \
        else [f'{work / "gt"}:gt']
    if args.real is not None:
        arms['real'] = ([f'{args.real}:real'], {})
        union.append(f'{args.real}:real')
    configs = {name: recipe(args.config, work, name + args.label, counts, union)
               for name, (_, counts) in arms.items()}
    t = time.monotonic()
    decoded = sum(warm_cache(configs[n], arms[n][0], args.work / 'cache') for n in arms)
    timings['decode_s'] = time.monotonic() - t
    if args.until == 'data':
        return 0

    def train_arm(name: str) -> dict:
        data, config = arms[name][0], configs[name]
        tag = name + args.label
        return train(config, data, work / f'policy_{tag}', args.task, args.train_minutes,
                     args.work / 'cache', logs / f'train_{tag}.log', args.train_steps,
                     threads=max(1, (os.cpu_count() or 1) // len(arms)))

    t = time.monotonic()
    with ThreadPoolExecutor(len(arms)) as pool:   # the machine's cores shared out among arms
        trained = dict(zip(arms, pool.map(train_arm, arms), strict=True))
    timings['train_s'] = time.monotonic() - t
    if args.until == 'train':
        return 0

    t = time.monotonic()
    eval_dir = work / f'evaluation{args.label}'
    run([str(BIN / 'comsim-policy-eval'), '--mode', 'in_process',
         '--checkpoints', *[str(work / f'policy_{n}{args.label}') for n in arms],
         '--tasks', args.task,
         '--regions', 'id', 'ood', '--rollouts', str(args.rollouts), '--seed',
         str(args.eval_seed), '--out', str(eval_dir)], logs / f'evaluation{args.label}.log')
    timings['evaluation_s'] = time.monotonic() - t
    evaluation = json.loads((eval_dir / 'results.json').read_text())
    write_result(args.out, {
        'task': args.task, 'work': str(args.work), 'ground_truth': {'filmed': filmed,
                                                                   'lab_successes': ok},
        'recipe': str(args.config), 'episodes_requested': args.episodes,
        'episodes_decoded': decoded, 'trained': trained,
        'timings_s': {k: round(v, 1) for k, v in timings.items()},
        'table': evaluation.get('table'), 'paired': evaluation.get('paired'),
        'failures': {cell: cell_failures(rollouts, table.STILL_M)
                     for cell, rollouts in by_cell(evaluation['rollouts']).items()}},
        torch_machine())
    for row in evaluation.get('table', []):
        print(row)
    return 0


if __name__ == '__main__':
    sys.exit(main())
