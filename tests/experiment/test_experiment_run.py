"""A resumable run: finished stages are read back, not rerun; an interrupted stage runs again;
a run resumed with other settings is refused in one line (exit 2 from the main job)."""
import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from comsim_core.errors import UserError
from comsim_core.experiment.config import ExperimentConfig, ExperimentConfigError
from comsim_core.experiment.run import (
    Run,
    RunMismatchError,
    RunRecordError,
    run_amendments,
    run_options,
    run_settings,
    stage_result,
)

ROOT = Path(__file__).resolve().parents[2]


def test_a_finished_stage_is_read_back_and_an_interrupted_one_runs_again(tmp_path):
    calls = []

    def stage(name, value):
        def fn():
            calls.append(name)
            if value is None:
                raise KeyboardInterrupt        # the process is killed halfway
            return {'value': value}
        return fn

    run = Run(tmp_path, {'scale': 'reduced'})
    assert run.stage('record', stage('record', 1)) == {'value': 1}
    with pytest.raises(KeyboardInterrupt):
        run.stage('twin', stage('twin', None))
    assert not run.done('twin')

    again = Run(tmp_path, {'scale': 'reduced'})
    assert again.stage('record', stage('record', 99)) == {'value': 1}   # not rerun
    assert again.stage('twin', stage('twin', 2)) == {'value': 2}
    assert calls == ['record', 'twin', 'twin']
    assert list(again.timings()) == ['record', 'twin']
    assert not list((tmp_path / 'stages').glob('.*.tmp'))


def test_a_reader_gets_a_runs_settings_and_finished_stages_without_touching_it(tmp_path):
    """Bench tools read a run (``run_settings``, ``stage_result``) without ``Run``'s check
    and write of run.json; an unfinished stage or a folder that is no run is one clear line."""
    with pytest.raises(RunRecordError, match='no run.json'):
        run_settings(tmp_path)
    run = Run(tmp_path, {'scale': 'paper'})
    run.stage('twin', lambda: {'sim': '/x'})
    before = (tmp_path / 'run.json').read_text()
    assert run_settings(tmp_path) == {'scale': 'paper'}
    assert stage_result(tmp_path, 'twin') == {'sim': '/x'} == run.result('twin')
    with pytest.raises(RunRecordError, match="stage 'video' of this run has not finished"):
        stage_result(tmp_path, 'video')
    assert (tmp_path / 'run.json').read_text() == before


def test_resuming_with_other_settings_is_refused(tmp_path):
    Run(tmp_path, {'scale': 'reduced', 'tasks': ['move_card']})
    with pytest.raises(RunMismatchError, match=r'run.json: .*tasks.*start a new --out'):
        Run(tmp_path, {'scale': 'reduced', 'tasks': ['stack_blocks']})


def test_the_shipped_scales_hold_what_the_issue_asks():
    cfg = ExperimentConfig.load(ROOT / 'config' / 'experiment.yaml')
    reduced, paper = cfg.scale('reduced'), cfg.scale('paper')
    assert {'A', 'B', 'C', 'E'} <= set(reduced.arms) and reduced.rollouts >= 20
    assert set(paper.arms) == {'A', "A'", 'B', 'C', 'D', 'E'} and paper.rollouts >= 40
    assert (paper.real, paper.generated, paper.recorded) == (10, 200, 20)
    assert paper.unseen and all(cfg.variants(t) for t in ('move_card', 'stack_blocks',
                                                           'shake_bottle'))


def test_the_held_out_variants_are_outside_what_the_twin_generates():
    """The `unseen` cell's objects (the bench lab's variants, read here by the test, never by
    the twin) lie outside the generated data's colours and sizes: held out of every arm."""
    import colorsys

    import yaml

    from comsim_twin.generation.config import GenerationConfig
    from comsim_twin.generation.randomise import hue_excluded

    cfg = ExperimentConfig.load(ROOT / 'config' / 'experiment.yaml')
    lab = yaml.safe_load((ROOT / 'config' / 'bench_lab' / 'lab.yaml').read_text())['tasks']
    rand = GenerationConfig.load().randomise
    lo, hi = rand['size_scale']
    jitter = rand['object_color_jitter']
    for task, held in cfg.unseen_variants.items():
        for variant in held:
            for obj, override in lab[task]['variants'][variant].items():
                default = lab[task]['objects'][obj]
                if 'color' in override:
                    rgb = override['color']
                    hue = 360 * colorsys.rgb_to_hsv(*rgb)[0]
                    bands = rand['recolour'][task]['exclude_hue_deg']
                    assert hue_excluded(hue, bands), (task, variant)
                    assert max(abs(a - b) for a, b in zip(rgb, default['color'])) > 3 * jitter
                if 'size' in override:
                    ratios = [a / b for a, b in zip(override['size'], default['size'])]
                    assert any(not lo <= r <= hi for r in ratios), (task, variant, ratios)


def test_a_bad_scale_names_the_file_and_key(tmp_path):
    bad = tmp_path / 'experiment.yaml'
    text = (ROOT / 'config' / 'experiment.yaml').read_text().replace('arms: [A, B, C, E]',
                                                                     'arms: [A, Z]')
    bad.write_text(text)
    with pytest.raises(ExperimentConfigError, match=r'experiment.yaml: scales.reduced.arms: '
                                                    r'expected some of'):
        ExperimentConfig.load(bad)
    bad.write_text((ROOT / 'config' / 'experiment.yaml').read_text().replace(
        'pair_appearance_variants: 4', 'pair_appearance_variants: -1'))
    with pytest.raises(ExperimentConfigError, match=r'experiment.yaml: pair_appearance_variants: '
                                                    r'must be >= 0, got -1'):
        ExperimentConfig.load(bad)


def finished_run(tmp_path: Path, argv: tuple[str, ...] = ('--scale', 'reduced'),
                 options: bool = False, until: str | None = None) -> Path:
    """A run folder whose every stage (up to ``until``) has its record: what a completed run
    leaves; with ``options`` it keeps the options it started with, as the main job does."""
    sys.path.insert(0, str(ROOT / 'scripts'))
    import main_job  # noqa: PLC0415

    out = tmp_path / 'run'
    args = main_job.parse_args(list(argv))
    cfg, scale = main_job.experiment_settings(args)
    run = Run(out, main_job.settings(args, cfg, scale),
              main_job.stored_options(args) if options else None)
    trials = [{'arm': a, 'task': 'move_card', 'cell': 'id', 'seed': 1000 + i,
               'success': a == 'C' and i < 3} for a in ('A', 'C') for i in range(4)]
    records = {
        'record': {'episodes': str(tmp_path / 'episodes'), 'section': '## Recording\n'},
        'twin': {'sim': 's', 'paired': 'p', 'section': '## Digital twin\n'},
        'ground_truth': {'ground_truth': 'g', 'trajectories': {'move_card': ['e0']},
                         'section': '## Ground truth\n'},
        'neural_sim': {'pseudo_real': 'x', 'checkpoint': 'c', 'section': '## Neural sim\n'},
        'video': {'rows': [], 'section': '## Video table\n'},
        'policy': {'trials': trials, 'labels': {'A': 'A: 10 real', 'C': 'C: pseudo'},
                   'section': '## The experiment\n\n| A: 10 real | 0/4 |\n'}}
    for name, result in records.items():
        run.stage(name, lambda r=result: r)
        if name == until:
            break
    return out


def main_job_cli(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / 'scripts' / 'main_job.py'), *argv],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)


def test_a_resume_takes_the_runs_own_options_and_refuses_others(tmp_path):
    """Resuming needs only the folder: the options the run started with come from its record;
    a different value for one of them is still another experiment, refused in one line."""
    out = finished_run(tmp_path, ('--scale', 'reduced', '--generated-share', '0.9',
                                  '--arms', 'A', 'C', '--policy-steps', '77'), options=True)
    res = main_job_cli('--resume', str(out))
    assert res.returncode == 0, res.stderr
    assert res.stdout.count('done in an earlier run') == 6
    assert 'for 77 steps, co-trained arms drawing 90 %' in (out / 'report.md').read_text()
    res = main_job_cli('--resume', str(out), '--policy-steps', '78')
    err = res.stderr.strip().splitlines()
    assert res.returncode == 2 and len(err) == 1, res.stderr
    assert 'this run started with other settings (counts' in err[0] and '78' in err[0]
    options = json.loads((out / 'run.json').read_text())['options']
    assert options['policy_steps'] == 77
    assert options['config'] == 'config/experiment.yaml'    # so another clone can resume it


def test_an_arm_is_left_out_by_a_resume_and_the_record_says_when(tmp_path):
    """--leave-out drops arms a session has no time for: recorded once in run.json with its
    time, cumulative over resumes, in the report; refused without --resume, for an arm the
    run does not have, for every arm, and once the policy stage has finished."""
    sys.path.insert(0, str(ROOT / 'scripts'))
    import main_job  # noqa: PLC0415
    import report  # noqa: PLC0415

    out = finished_run(tmp_path, ('--scale', 'reduced', '--arms', 'A', 'B', 'C'), options=True,
                       until='video')
    args = main_job.parse_args(['--resume', str(out)], run_options(out))
    cfg, scale = main_job.experiment_settings(args)
    run = Run(out, main_job.settings(args, cfg, scale))
    assert main_job.leave_out(run, scale, [], False) == set()
    assert main_job.leave_out(run, scale, ['B'], False) == {'B'}
    assert main_job.leave_out(run, scale, ['B'], False) == {'B'}    # once is recorded once
    assert [m['leave_out'] for m in run_amendments(out)] == [['B']]
    with pytest.raises(UserError, match=r"\['D'\] are not arms of this run"):
        main_job.leave_out(run, scale, ['D'], False)
    with pytest.raises(UserError, match='would leave no arm'):
        main_job.leave_out(run, scale, ['A', 'C'], False)
    with pytest.raises(UserError, match='policy stage of .* has finished'):
        main_job.leave_out(run, scale, ['C'], True)
    assert main_job.leave_out(Run(out, run.settings), scale, ['C'], False) == {'B', 'C'}
    text = report.experiment_report(out, 'reduced', cfg, scale, {}, {}, [], run.amendments())
    at = run_amendments(out)[0]['at']
    assert f'Left out by a resume (not trained or rolled out; the normaliser is still fitted on ' \
           f'the data of every arm of the run): B ({at}); C (' in text
    res = main_job_cli('--out', str(tmp_path / 'new'), '--leave-out', 'B')
    assert res.returncode == 2 and not (tmp_path / 'new').exists()
    assert res.stderr.strip() == ('main_job: error: --leave-out: only with --resume RUN (a new '
                                  'run names its arms with --arms)')


def test_the_generated_share_can_be_set_on_the_command_line_and_is_a_run_setting(tmp_path):
    sys.path.insert(0, str(ROOT / 'scripts'))
    import main_job  # noqa: PLC0415

    args = main_job.parse_args(['--scale', 'paper', '--generated-share', '0.9'])
    cfg, scale = main_job.experiment_settings(args)
    assert cfg.generated_share == 0.9
    Run(tmp_path / 'run', main_job.settings(args, cfg, scale))
    plain = main_job.parse_args(['--scale', 'paper'])
    with pytest.raises(RunMismatchError, match='generated_share'):
        Run(tmp_path / 'run', main_job.settings(plain, *main_job.experiment_settings(plain)))
    res = main_job_cli('--out', str(tmp_path / 'x'), '--generated-share', '1.5')
    assert res.returncode == 2 and not (tmp_path / 'x').exists()
    assert res.stderr.strip() == 'main_job: error: --generated-share: must be in (0, 1), got 1.5'
    import report  # noqa: PLC0415

    text = report.experiment_report(tmp_path, 'paper', cfg, scale, {}, {}, [])
    assert 'co-trained arms drawing 90 % of their samples from generated data' in text
    alone = report.experiment_report(tmp_path, 'paper', cfg,
                                     dataclasses.replace(scale, arms=['A', "A'", 'D']), {}, {}, [])
    assert 'co-trained' not in alone      # no arm mixes real and generated samples


def test_the_main_job_resumes_a_finished_run_without_running_a_stage(tmp_path):
    out = finished_run(tmp_path)
    res = main_job_cli('--resume', str(out))
    assert res.returncode == 0, res.stderr
    assert res.stdout.count('done in an earlier run') == 6
    text = (out / 'report.md').read_text()
    assert text.index('## The experiment') < text.index('## Recording') < \
        text.index('## Video table')
    assert '| policy |' in text and '--resume' in text


def test_the_main_job_refuses_to_resume_with_another_scale(tmp_path):
    out = finished_run(tmp_path)
    res = main_job_cli('--resume', str(out), '--scale', 'paper')
    assert res.returncode == 2
    err = res.stderr.strip().splitlines()
    assert len(err) == 1 and 'this run started with other settings' in err[0], res.stderr
    assert json.loads((out / 'run.json').read_text())['settings']['scale'] == 'reduced'


def test_the_main_job_refuses_to_resume_after_its_recipe_changed(tmp_path):
    """A recipe edited between two sessions of a run would train the remaining arms with
    another recipe than the finished ones: the resume names the setting and stops."""
    recipe = tmp_path / 'recipe.yaml'
    recipe.write_text((ROOT / 'config' / 'policy_train.yaml').read_text())
    experiment = tmp_path / 'experiment.yaml'
    experiment.write_text((ROOT / 'config' / 'experiment.yaml').read_text().replace(
        'policy_config: config/policy_train.yaml', f'policy_config: {recipe}'))
    sys.path.insert(0, str(ROOT / 'scripts'))
    import main_job  # noqa: PLC0415

    args = main_job.parse_args(['--config', str(experiment)])
    cfg, scale = main_job.experiment_settings(args)
    Run(tmp_path / 'run', main_job.settings(args, cfg, scale))
    Run(tmp_path / 'run', main_job.settings(args, cfg, scale))      # unchanged: resumes
    recipe.write_text(recipe.read_text().replace('action_space: end_effector',
                                                 'action_space: joint'))
    with pytest.raises(RunMismatchError, match=r'other settings \(configs'):
        Run(tmp_path / 'run', main_job.settings(args, cfg, scale))


def test_appearance_variant_pairs_are_a_run_setting_only_when_made(tmp_path):
    """A run made before the option (no key) resumes under a config that makes none; one that
    makes them (the shipped config) is another experiment; without appearance randomisation
    none are made."""
    sys.path.insert(0, str(ROOT / 'scripts'))
    import main_job  # noqa: PLC0415

    text = (ROOT / 'config' / 'experiment.yaml').read_text()
    none = tmp_path / 'none.yaml'
    none.write_text(text.replace('pair_appearance_variants: 4', 'pair_appearance_variants: 0'))
    args = main_job.parse_args(['--scale', 'paper', '--config', str(none)])
    cfg, scale = main_job.experiment_settings(args)
    assert cfg.pair_appearance_variants == 0
    assert 'pair_appearance_variants' not in main_job.settings(args, cfg, scale)
    Run(tmp_path / 'run', main_job.settings(args, cfg, scale))
    made = ROOT / 'config' / 'experiment.yaml'
    four = main_job.parse_args(['--scale', 'paper'])
    cfg4, scale4 = main_job.experiment_settings(four)
    assert main_job.pair_variants(cfg4) == 4
    assert main_job.settings(four, cfg4, scale4)['pair_appearance_variants'] == 4
    with pytest.raises(RunMismatchError, match='pair_appearance_variants'):
        Run(tmp_path / 'run', main_job.settings(four, cfg4, scale4))
    plain = tmp_path / 'plain.yaml'
    plain.write_text(made.read_text().replace('appearance_randomisation: true',
                                              'appearance_randomisation: false'))
    off = main_job.parse_args(['--scale', 'paper', '--config', str(plain)])
    assert main_job.pair_variants(main_job.experiment_settings(off)[0]) == 0


def test_the_twin_writes_object_masks_only_for_a_neural_simulator_that_weighs_them(tmp_path):
    sys.path.insert(0, str(ROOT / 'scripts'))
    import main_job  # noqa: PLC0415

    args = main_job.parse_args(['--scale', 'paper'])
    shipped, scale = main_job.experiment_settings(args)
    assert main_job.weighs_objects(shipped)          # the experiment's override
    assert main_job.settings(args, shipped, scale)['neural_sim_overrides'] == \
        {'object_loss_weight': 64}
    plain = dataclasses.replace(shipped, neural_sim_overrides={})
    assert not main_job.weighs_objects(plain)        # the component's default: plain loss
    assert 'neural_sim_overrides' not in main_job.settings(args, plain, scale)
    weighted = tmp_path / 'neural_sim.yaml'
    weighted.write_text((ROOT / plain.neural_sim_config).read_text()
                        + '\nobject_loss_weight: 8.0\n')
    assert main_job.weighs_objects(dataclasses.replace(plain, neural_sim_config=str(weighted)))


def test_a_bad_neural_sim_override_gets_one_line_naming_the_experiment_config():
    sys.path.insert(0, str(ROOT / 'scripts'))
    import main_job  # noqa: PLC0415

    from comsim_neural_sim.errors import ConfigError as NeuralSimConfigError

    cfg, _ = main_job.experiment_settings(main_job.parse_args(['--scale', 'paper']))
    with pytest.raises(NeuralSimConfigError, match=r'experiment.yaml: neural_sim_overrides: '
                                                   r'unknown key\(s\) object_los_weight'):
        main_job.neural_sim_config(dataclasses.replace(
            cfg, neural_sim_overrides={'object_los_weight': 64}))
    with pytest.raises(NeuralSimConfigError, match='object_loss_weight: expected a number'):
        main_job.neural_sim_config(dataclasses.replace(
            cfg, neural_sim_overrides={'object_loss_weight': 'heavy'}))


def test_a_replication_records_new_layouts_that_the_evaluation_never_reuses(tmp_path):
    """record_seed moves the demos' layouts (a run made before the key, 0, resumes as it was);
    demos on the evaluation's layouts are refused before anything runs, in one line."""
    sys.path.insert(0, str(ROOT / 'scripts'))
    import main_job  # noqa: PLC0415

    text = (ROOT / 'config' / 'experiment.yaml').read_text()
    assert 'record_seed: 0\n' in text
    plain = main_job.parse_args(['--scale', 'paper'])
    assert 'record_seed' not in main_job.settings(plain, *main_job.experiment_settings(plain))
    moved = tmp_path / 'moved.yaml'
    moved.write_text(text.replace('record_seed: 0\n', 'record_seed: 100\n'))
    args = main_job.parse_args(['--scale', 'paper', '--config', str(moved)])
    cfg, scale = main_job.experiment_settings(args)
    assert main_job.settings(args, cfg, scale)['record_seed'] == 100
    Run(tmp_path / 'run', main_job.settings(plain, *main_job.experiment_settings(plain)))
    with pytest.raises(RunMismatchError, match='record_seed'):
        Run(tmp_path / 'run', main_job.settings(args, cfg, scale))
    # paper: 20 demos (A' records twice 10) on 990..1009 against the evaluation's 1000..1039
    clash = tmp_path / 'clash.yaml'
    clash.write_text(text.replace('record_seed: 0\n', 'record_seed: 990\n'))
    res = main_job_cli('--out', str(tmp_path / 'x'), '--scale', 'paper', '--config', str(clash))
    assert res.returncode == 2 and not (tmp_path / 'x').exists()
    assert res.stderr.strip() == (
        f"main_job: error: {clash}: record_seed: the demos' layout seeds 990..1009 overlap the "
        "evaluation's (eval_seed) 1000..1039; move one of them")
