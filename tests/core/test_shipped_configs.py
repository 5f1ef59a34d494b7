"""Every config file the workspace ships loads through its strict dataclass: a key the loader
refuses would otherwise surface only when a user runs that stage."""
from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _policy(path):
    from comsim_policy.config import PolicyConfig
    return PolicyConfig.from_yaml(path)


def _neural_sim(path):
    from comsim_neural_sim.config import NeuralSimConfig
    return NeuralSimConfig.from_yaml(path)


def _lab(path):
    from comsim_bench_lab.config import LabConfig
    return LabConfig.load(path)


def _realism(path):
    from comsim_bench_lab.realism import RealismProfile
    return RealismProfile.load(path)


def _generation(path):
    from comsim_twin.generation.config import GenerationConfig
    return GenerationConfig.load(path)


def _sheet(path):
    from comsim_twin.alignment.sheet import load_sheet
    return load_sheet(path)


def _evaluation(path):
    from comsim_policy.evaluation.cli import load_config
    return load_config(str(path))


def _experiment(path):
    from comsim_core.experiment.config import ExperimentConfig
    return ExperimentConfig.load(path)


def _calibration(path):
    from comsim_twin.calibration.setup import load_calibration_setup
    return load_calibration_setup(path)


LOADERS = {'policy_train.yaml': _policy, 'policy_train_gpu.yaml': _policy,
           'policy_train_gpu16.yaml': _policy,
           'policy_train_main_job.yaml': _policy, 'neural_sim.yaml': _neural_sim,
           'neural_sim_gpu.yaml': _neural_sim, 'bench_lab/lab.yaml': _lab,
           'bench_lab/realism.yaml': _realism, 'twin/generation.yaml': _generation,
           'twin/objects.yaml': _sheet, 'evaluation.yaml': _evaluation,
           'twin/calibration.yaml': _calibration, 'experiment.yaml': _experiment}
# Stored verbatim with every episode (the recorder's lab_config_file), read by people.
FREE_FORM = {'lab_setup.yaml'}


@pytest.mark.parametrize('name', sorted(LOADERS))
def test_shipped_config_loads(name):
    assert LOADERS[name](ROOT / 'config' / name) is not None


def test_every_structured_config_has_a_strict_loader():
    """A YAML under config/ is either a node's ROS parameters or loaded strictly above."""
    structured = {str(p.relative_to(ROOT / 'config')) for p in (ROOT / 'config').rglob('*.yaml')
                  if 'ros__parameters' not in p.read_text()}
    assert structured == set(LOADERS) | FREE_FORM


def test_evaluation_defaults_are_the_files():
    """The CLI has no defaults of its own: config/evaluation.yaml's 20 rollouts, not 10."""
    import yaml
    shipped = yaml.safe_load((ROOT / 'config/evaluation.yaml').read_text())['evaluation']
    cfg = _evaluation(ROOT / 'config/evaluation.yaml')
    assert cfg.rollouts == shipped['rollouts'] and cfg.seed == shipped['seed']
    assert cfg.tasks == shipped['tasks']


def test_a_partial_evaluation_file_sets_only_its_keys(tmp_path):
    from comsim_policy.evaluation.cli import load_config
    f = tmp_path / 'eval.yaml'
    f.write_text('evaluation:\n  rollouts: 3\n')
    cfg = load_config(str(f))
    assert cfg.rollouts == 3 and cfg.regions == load_config(None).regions
