"""LabConfig / RealismProfile loading and validation messages."""
import copy
from pathlib import Path

import numpy as np
import pytest
import yaml

from comsim_bench_lab.config import LabConfig, LabConfigError, look_at_rotation
from comsim_bench_lab.realism import RealismProfile

ROOT = Path(__file__).resolve().parents[2]
LAB = ROOT / 'config/bench_lab/lab.yaml'
REALISM = ROOT / 'config/bench_lab/realism.yaml'


@pytest.fixture(scope='module')
def raw():
    return yaml.safe_load(LAB.read_text())


def test_lab_yaml_loads(raw):
    cfg = LabConfig.load(LAB)
    assert cfg.timestep <= 0.002
    assert set(cfg.cameras) == {'front', 'side'}
    for cam in cfg.cameras.values():
        assert np.any(cam.distortion != 0)
        np.testing.assert_allclose(cam.rotation.T @ cam.rotation, np.eye(3), atol=1e-9)
    for task in ('stack_blocks', 'move_card', 'shake_bottle'):
        t = cfg.tasks[task]
        assert not t.regions['id'].overlaps(t.regions['ood'])
        assert 'default' in t.variants and len(t.variants) >= 2


def test_variant_overrides_apply(raw):
    cfg = LabConfig.load(LAB)
    objs = cfg.tasks['stack_blocks'].objects_for('cylinders')
    assert objs['block_top'].shape == 'cylinder'
    assert cfg.tasks['stack_blocks'].objects['block_top'].shape == 'box'
    with pytest.raises(ValueError, match='allowed'):
        cfg.tasks['stack_blocks'].objects_for('nope')


@pytest.mark.parametrize('mutate, exc, text', [
    (lambda d: d['physics'].update(timestep=0.01), ValueError, 'physics.timestep'),
    (lambda d: d['physics'].pop('timestep'), KeyError, "physics: missing key 'timestep'"),
    (lambda d: d['cameras']['front'].pop('fx'), KeyError, "cameras.front: missing key 'fx'"),
    (lambda d: d['cameras']['front'].update(distortion=[0.1, 0.2]),
     ValueError, 'cameras.front.distortion'),
    (lambda d: d['tasks']['move_card']['regions'].update(ood={'x': [0.3, 0.4], 'y': [0.0, 0.1]}),
     ValueError, 'disjoint'),
    (lambda d: d['tasks']['stack_blocks']['objects']['block_top'].update(shape='cone'),
     ValueError, 'shape'),
    (lambda d: d['tasks']['stack_blocks']['variants'].update(bad={'ghost': {}}), KeyError, 'ghost'),
    (lambda d: d['tasks']['stack_blocks']['variants'].update(bad={'block_top': {'mass': 'x'}}),
     ValueError, "tasks.stack_blocks.variants.bad.block_top.mass: expected a number, got 'x'"),
    (lambda d: d['cameras']['front'].update(fx='fast'), ValueError,
     "cameras.front.fx: expected a number, got 'fast'"),
    (lambda d: d['cameras']['front'].pop('look_at'), KeyError, 'cameras.front: needs look_at'),
    (lambda d: d['cameras']['front'].update(cx=999), ValueError, 'cameras.front.cx: 999'),
    (lambda d: d['table'].update(colour=[1, 1, 1]), ValueError, 'table: unknown key(s) colour'),
    (lambda d: d['tasks']['move_card']['regions']['id'].update(x=[0.5, 0.3]), ValueError,
     'tasks.move_card.regions.id: needs min < max'),
])
def test_bad_config_names_file_and_key(raw, mutate, exc, text):
    data = copy.deepcopy(raw)
    mutate(data)
    with pytest.raises(exc) as err:
        LabConfig.from_dict(data, 'lab.yaml')
    assert text in str(err.value) and 'lab.yaml' in str(err.value)


def test_look_at_rotation_is_opencv_frame():
    rot = look_at_rotation(np.array([1.0, 0, 0.5]), np.array([0.0, 0, 0.5]))
    np.testing.assert_allclose(rot[:, 2], [-1, 0, 0], atol=1e-12)   # z forward
    np.testing.assert_allclose(rot[:, 1], [0, 0, -1], atol=1e-12)   # y down


def test_realism_yaml_and_errors():
    prof = RealismProfile.load(REALISM)
    assert prof.shadows and prof.latency_ms > 0 and prof.friction_scale != 1.0
    with pytest.raises(LabConfigError, match=r'realism.yaml: physics: unknown key\(s\) bogus'):
        RealismProfile.from_dict({'physics': {'bogus': 1}}, 'realism.yaml')
    with pytest.raises(ValueError, match="latency_ms: expected a number or null, got 'slow'"):
        RealismProfile.from_dict({'physics': {'latency_ms': 'slow'}}, 'realism.yaml')
    with pytest.raises(LabConfigError, match='physics.latency_ms: must be >= 0, got -1'):
        RealismProfile.from_dict({'physics': {'latency_ms': -1}}, 'realism.yaml')
    with pytest.raises(LabConfigError, match="render.table_texture: expected one of 'checker'"):
        RealismProfile.from_dict({'render': {'table_texture': 'marble'}}, 'realism.yaml')
    np.testing.assert_allclose(prof.white_balance, [1.06, 1.0, 0.9])   # a list in the file
    assert RealismProfile.from_dict({}, 'r.yaml').latency_ms == RealismProfile().latency_ms
