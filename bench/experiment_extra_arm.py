"""Train and roll out one more arm of a finished (or running) main-job experiment run, exactly as
the run trained its own: the run's recipe and step count, the normaliser fitted on the data of
the run's arms, the same trajectories and the same layout seeds, so its rollouts pair with the
run's (exact McNemar against each of them).

    .venv/bin/python bench/experiment_extra_arm.py --run output/main_job/<run> --arm B \\
        [--regions id ood] [--policy-steps N] [--rollouts N] [--generated-share S] \\
        [--eval-workers N] [--saved-episodes N] [--pseudo-real DIR] \\
        [--out bench/results/experiment_extra_arm_<arm>.json]

Why: a session's machine fits only some of the six arms at the recipe's steps; an arm the run
left out can be added afterwards without retraining the others. ``--policy-steps`` trains it at
another step count instead (a run arm again at more steps separates the budget from the data),
``--generated-share`` at another mix of generated and real samples.
An arm without pseudo-real data (A, A', B, E) can start once the run's ground-truth stage has
finished, while its neural simulator still trains (``early_start``). The checkpoint and
rollouts go into ``<run>/policy_stage/extra/<arm>[_steps<N>]/``, one folder per
arm so two can run side by side; the run's own folders and report are not touched. Run again
on a trained arm, it only evaluates: ``--regions ood --rollouts 160`` extends the ``ood`` cell
to seeds + 0..159, reusing the rollouts it journalled and keeping the other cells.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

from provenance import ROOT, torch_machine, write_result

from comsim_core.errors import UserError, cli_main
from comsim_core.experiment.run import run_settings, stage_record, stage_result
from comsim_core.statistics import wilson_interval
from comsim_policy.arms import Arm, arm_specs, normaliser_data, paper_arms, select_arms
from comsim_policy.evaluation.config import load_config as load_evaluation
from comsim_policy.evaluation.in_process import evaluate
from comsim_policy.evaluation.results import Evaluation, Rollout
from comsim_policy.stage import arm_config, load_stage_config, single_thread_cpu, train_policy

EXTRA = 'extra:'        # the added arm's rollouts, apart from a run checkpoint of the same name


def run_rollouts(run: Path) -> Evaluation:
    """The run's rollouts (its results, else what its evaluation journalled so far); none for
    a run stopped before its policy stage (``--until neural_sim``): the arm is then scored
    alone, ``k/N`` with its interval and no pairs."""
    folder = run / 'policy_stage' / 'policy' / 'evaluation'
    if not folder.is_dir():
        return Evaluation([])
    return read_rollouts(folder)


def read_rollouts(folder: Path) -> Evaluation:
    """An evaluation folder's rollouts: its results, else what it journalled so far."""
    if (folder / 'results.json').is_file():
        rows = json.loads((folder / 'results.json').read_text())['rollouts']
    elif (folder / 'rollouts.jsonl').is_file():
        lines = (folder / 'rollouts.jsonl').read_text().splitlines()
        rows = [json.loads(line)['rollout'] for line in lines if line.strip()]
    else:
        raise UserError(f'{folder}: no rollouts yet (results.json, rollouts.jsonl)')
    fields = set(Rollout.__dataclass_fields__)
    return Evaluation([Rollout(**{k: v for k, v in r.items() if k in fields}) for r in rows])


@cli_main('experiment_extra_arm')
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0].replace('\n', ' '))
    ap.add_argument('--run', type=Path, required=True, help='the run folder')
    which = ap.add_mutually_exclusive_group(required=True)
    which.add_argument('--arm', help="an arm letter (A A' B C D E)")
    which.add_argument('--data', nargs='+', metavar='SOURCE=N',
                       help='a diagnostic arm on other data, e.g. gt=200 (the lab filming the '
                            "run's generated trajectories, alone); samples in proportion to "
                            'the windows of each source')
    ap.add_argument('--regions', nargs='+', default=['id', 'ood'])
    ap.add_argument('--threads', type=int, default=2, help='torch threads for the training')
    ap.add_argument('--policy-steps', type=int, help="training steps (default: the run's)")
    ap.add_argument('--rollouts', type=int,
                    help="rollouts per cell (default: the run's); more than the run's extend "
                         "its seeds (seed + k), the journalled ones kept")
    ap.add_argument('--eval-workers', type=int, default=0,
                    help='rollout worker processes (default 0: one per core); 1 beside a '
                         'training on the other core')
    ap.add_argument('--saved-episodes', type=int,
                    help='rollouts of each cell kept as episodes, the first ones (-1: all; '
                         "default: config/evaluation.yaml's); the rest are only journalled")
    ap.add_argument('--pseudo-real', type=Path,
                    help="pseudo-real episodes to use instead of the run's (another neural "
                         "simulator's translations of the same trajectories); the arm's folder "
                         'gets the suffix _pr-<parent folder name>')
    ap.add_argument('--generated-share', type=float,
                    help="share of a co-trained arm's samples drawn from generated episodes "
                         "(default: the run's); the arm's folder gets the suffix _share<percent>")
    ap.add_argument('--out', type=Path,
                    help='result JSON (default bench/results/experiment_extra_arm_<folder>.json)')
    args = ap.parse_args(argv)
    run = args.run.resolve()
    settings = run_settings(run)
    counts = settings['counts']
    stages = {n: stage_result(run, n) for n in ('twin', 'ground_truth')}
    n_gen = counts['generated']
    arms = paper_arms(counts['real'], n_gen, settings['generated_share'])
    share = generated_share(args.generated_share, settings['generated_share'])
    extra = (select_arms(paper_arms(counts['real'], n_gen, share), [args.arm])[0] if args.arm
             else diagnostic_arm(args.data))
    run_arms = select_arms(arms, counts['arms'])
    folders = {'real': run / 'episodes', 'sim': Path(stages['twin']['sim']),
               'gt': Path(stages['ground_truth']['ground_truth'])}
    if args.pseudo_real is None and not early_start(run, extra):
        folders['pseudo_real'] = Path(stage_result(run, 'neural_sim')['pseudo_real'])
    if args.pseudo_real is not None:
        if not args.pseudo_real.is_dir():
            raise UserError(f'--pseudo-real: no folder at {args.pseudo_real}')
        folders['pseudo_real'] = args.pseudo_real.resolve()
    names = {n for ns in stages['ground_truth']['trajectories'].values() for n in ns}
    allowed = {s: names for s in ('sim', 'pseudo_real', 'gt')}
    # The run's normaliser: fitted on the sources of the run's arms (the generated sources
    # carry the same motions, so an arm on another of them fits inside it too).
    union = normaliser_data(run_arms, folders)
    recipe = load_stage_config(ROOT / counts['policy_config'])
    recipe.train.device = 'cpu'
    recipe.train.cache_dir = str(run / 'policy_stage' / 'cache')
    if args.policy_steps is not None and args.policy_steps < 1:
        raise UserError(f'--policy-steps: expected a step count >= 1, got {args.policy_steps}')
    if args.eval_workers < 0:
        raise UserError(f'--eval-workers: expected a count >= 0, got {args.eval_workers}')
    steps = args.policy_steps or counts.get('policy_steps')
    if steps:
        recipe.train.max_steps = int(steps)
    name = extra_folder(extra, args.policy_steps, args.pseudo_real,
                        share if share != settings['generated_share'] and extra.weights
                        else None)        # an arm without a mix (A, D) is the run's
    out = run / 'policy_stage' / 'extra' / name
    result_json = args.out or ROOT / f'bench/results/experiment_extra_arm_{name}.json'
    t0 = time.monotonic()
    results = {}
    with single_thread_cpu():
        import torch
        torch.set_num_threads(args.threads)
        for task in settings['tasks']:
            specs = arm_specs(extra, folders, [task], allowed)
            trained = train_policy(extra.name, task, specs, arm_config(recipe, extra, union), out,
                                   lambda s: print(s, flush=True), extra.label, resume=True)
            train_s = time.monotonic() - t0
            eval_cfg = dataclasses.replace(
                load_evaluation(None), tasks=[task], rollouts=cell_rollouts(args.rollouts, counts),
                regions=list(args.regions), variants=[''], out=str(out / 'evaluation'),
                seed=int(settings['eval_seed']), sheets=1, resume=True,
                workers=args.eval_workers,
                **({} if args.saved_episodes is None else {'saved_episodes': args.saved_episodes}))
            before = (read_rollouts(out / 'evaluation')
                      if (out / 'evaluation' / 'results.json').is_file() else Evaluation([]))
            mine = keep_earlier(before, evaluate([trained.path], eval_cfg,
                                                 log=lambda s: print(s, flush=True)))
            mine.save(out / 'evaluation' / 'results.json')
            theirs = run_rollouts(run)
            results[task] = compare(mine, theirs, task, args.regions)
            results[task].update(steps=trained.steps, train_s=round(train_s),
                                 val_action_mae=trained.val_action_mae_by_name)
    out_json = {'run': str(run), 'arm': extra.label, 'folder': name,
                'generated_share': share, 'policy_steps': recipe.train.max_steps,
                'settings': settings, 'wall_s': round(time.monotonic() - t0), 'tasks': results}
    print(json.dumps(results, indent=1))
    write_result(result_json, out_json, torch_machine())
    return 0


def keep_earlier(before: Evaluation, now: Evaluation) -> Evaluation:
    """The arm's rollouts: this evaluation's, and the earlier ones of cells or seeds it did not
    ask for (``--regions ood --rollouts 160`` after the run's 40 a cell keeps the ``id`` cell),
    so the folder's ``results.json`` stays the arm's whole record."""
    asked = {(r.task, r.region, r.variant, r.seed) for r in now.rollouts}
    return Evaluation([r for r in before.rollouts
                       if (r.task, r.region, r.variant, r.seed) not in asked] + now.rollouts)


def cell_rollouts(asked: int | None, counts: dict) -> int:
    """Rollouts per cell: the run's count, or ``--rollouts``. Why more: 40 rollouts cannot
    tell a 5 % arm from a 0 % one (McNemar needs six discordant successes, none against); the
    same seeds + k for every arm keep the extended cells paired, and the first ``counts``
    seeds are the run's own layouts, so its earlier rollouts are reused."""
    if asked is None:
        return int(counts['rollouts'])
    if asked < 1:
        raise UserError(f'--rollouts: expected a count >= 1, got {asked}')
    return asked


def early_start(run: Path, arm: Arm) -> bool:
    """Whether the arm starts before the run's neural simulator has finished: only an arm
    without pseudo-real data. Its normaliser is the run's all the same: translations copy the
    sim episodes' joint states and commands byte for byte, and the sim folder holds every
    translated trajectory, so the pseudo-real folder adds nothing to the range (run
    20261207-173656: A started early and C fitted ranges equal to 1.5e-8)."""
    if 'pseudo_real' in arm.counts or stage_record(run, 'neural_sim').is_file():
        return False
    print(f'{run.name}: the neural-sim stage has not finished; {arm.label} does not need it '
          '(the normaliser is fitted without the pseudo-real folder, whose motions are the '
          "sim folder's)", flush=True)
    return True


def extra_folder(arm: Arm, policy_steps: int | None, pseudo_real: Path | None = None,
                 share: float | None = None) -> str:
    """The added arm's folder name: its name, the step count when it is not the run's, the
    pseudo-real folder's parent when those are not the run's translations, and the generated
    share (in percent) when it is not the run's."""
    return (arm.name + (f'_steps{policy_steps}' if policy_steps else '')
            + (f'_pr-{pseudo_real.resolve().parent.name}' if pseudo_real else '')
            + (f'_share{round(share * 100)}' if share is not None else ''))


def generated_share(asked: float | None, run_share: float) -> float:
    """The co-trained arm's generated share: the run's, or ``--generated-share`` in (0, 1).
    Why: the share moves `ood` more than the recording does (run 20261207-173656: E 105/160
    `ood` at 0.9, 19/160 at 0.5; C'' 0/160 and 13/160), which only retraining an arm at another
    share on the same run shows."""
    if asked is None:
        return float(run_share)
    if not 0.0 < asked < 1.0:
        raise UserError(f'--generated-share: expected a share in (0, 1), got {asked:g}')
    return asked


def diagnostic_arm(data: list[str]) -> Arm:
    """An arm outside the paper's six, from ``SOURCE=N`` words (one clear line when bad)."""
    counts = {}
    for word in data:
        source, _, n = word.partition('=')
        if not n.isdigit() or int(n) < 1:
            raise UserError(f'--data: expected SOURCE=N with N >= 1, got {word!r}')
        counts[source] = int(n)
    name = '_'.join(f'{s}{n}' for s, n in counts.items())
    try:
        return Arm(name, 'X: ' + ' + '.join(f'{n} {s}' for s, n in counts.items()), counts)
    except ValueError as exc:
        raise UserError(f'--data: {exc}') from None


def compare(mine: Evaluation, theirs: Evaluation, task: str, regions: list[str]) -> dict:
    """Per region: the extra arm's k/N with its Wilson interval, its outcome per layout seed
    (``{seed: success}``: kept in the result so an arm of another run, on another machine, can
    be paired with it later, ``bench/experiment_pairs.py --results``), and the exact McNemar
    test against each of the run's checkpoints on the shared seeds (``Evaluation.paired``, the
    extra arm first, so it is ``a`` in every pair)."""
    def kept(rollouts: list[Rollout], tag: str) -> list[Rollout]:
        return [dataclasses.replace(r, checkpoint=tag + r.checkpoint) for r in rollouts
                if r.task == task and r.region in regions and r.cell[2] == 'default']

    both = Evaluation(kept(mine.rollouts, EXTRA) + kept(theirs.rollouts, ''))
    rows = {(row['checkpoint'], row['region']): row for row in both.table()}
    out = {}
    for region in regions:
        row = next((r for (name, reg), r in rows.items()
                    if reg == region and name.startswith(EXTRA)), None)
        k, n = (row['successes'], row['rollouts']) if row else (0, 0)
        lo, hi = wilson_interval(k, n)
        outcomes = {str(r.seed): r.success for r in sorted(both.rollouts, key=lambda r: r.seed)
                    if r.checkpoint.startswith(EXTRA) and r.region == region}
        out[region] = {'k': k, 'n': n, 'interval': [round(lo, 3), round(hi, 3)],
                       'outcomes': outcomes, 'paired': {
            p['b']: {'pairs': p['pairs'], 'extra_only': p['only_a'], 'other_only': p['only_b'],
                     'k_other': p['successes_b'], 'p': round(p['p_mcnemar'], 4)}
            for p in both.paired() if p['region'] == region and p['a'].startswith(EXTRA)
            and not p['b'].startswith(EXTRA)}}
    return out


if __name__ == '__main__':
    sys.exit(main())
