"""Randomisation stays inside the configured regions and is reproducible from the seed."""

import numpy as np
import pytest

from comsim_core.tasks.bodies import footprint
from comsim_core.tasks.registry import get_task
from comsim_twin.generation.config import GenerationConfig, GenerationConfigError
from comsim_twin.generation.randomise import (
    RandomiseError,
    appearance_variant,
    episode_seed,
    hue_excluded,
    in_region,
    randomise,
    scale_cameras,
)
from fixtures.twin_scenes import base_scene


@pytest.fixture(scope='module')
def cfg():
    return GenerationConfig.load()


TASKS = ('move_card', 'shake_bottle', 'stack_blocks')


@pytest.mark.parametrize('task', TASKS)
@pytest.mark.parametrize('region', ['id', 'wide', 'workspace'])
def test_layout_inside_region_and_distractors_clear(cfg, task, region):
    base = base_scene(task)
    reg = cfg.task(task)['regions'][region]
    rcfg = cfg.randomise
    clear = rcfg['distractors']['clearance']
    counts = set()
    for i in range(40):
        r = randomise(base, task, cfg, episode_seed(3, task, i), region)
        assert r.params['region'] == region
        task_objs = [r.scene.objects[n] for n in get_task(task).objects]
        for o in task_objs:
            assert in_region(o.pos[:2], reg, margin=0.0), (o.name, o.pos, reg)
            assert o.pos[2] > 0
        if 'zone_center' in r.target:
            assert in_region(r.target['zone_center'], reg)
            d = np.linalg.norm(np.subtract(r.target['zone_center'], task_objs[0].pos[:2]))
            assert 0.10 <= d <= 0.18
        if task == 'stack_blocks':
            a, b = task_objs
            assert np.linalg.norm(np.subtract(a.pos[:2], b.pos[:2])) >= \
                footprint(a) + footprint(b) + cfg.task(task)['min_gap'] - 1e-9
        ds = [o for n, o in r.scene.objects.items() if n.startswith('distractor_')]
        counts.add(len(ds))
        for d in ds:
            for o in task_objs:
                gap = np.linalg.norm(np.subtract(d.pos[:2], o.pos[:2]))
                assert gap >= footprint(o) + clear
        lo, hi = rcfg['size_scale']
        assert lo <= r.params['size_scale'] <= hi
        assert lo <= task_objs[0].size[0] / base.objects[task_objs[0].name].size[0] <= hi
        llo, lhi = rcfg['light_scale']
        assert llo <= r.light_scale <= lhi
        for name, cam in r.scene.cameras.items():
            dp = cam.T_base_camera[:3, 3] - base.cameras[name].T_base_camera[:3, 3]
            assert np.all(np.abs(dp) <= rcfg['camera_position_jitter'] + 1e-12)
            assert np.allclose(cam.T_base_camera[:3, :3] @ cam.T_base_camera[:3, :3].T, np.eye(3))
    assert len(counts) > 1                                     # the distractor count varies


def test_same_seed_same_scene_other_seed_other_scene(cfg):
    base = base_scene('stack_blocks')
    a = randomise(base, 'stack_blocks', cfg, 11)
    b = randomise(base, 'stack_blocks', cfg, 11)
    c = randomise(base, 'stack_blocks', cfg, 12)
    assert a.params == b.params and a.scene.to_dict() == b.scene.to_dict()
    assert a.params != c.params
    assert base.objects['block_top'].pos == [0.4, 0.0, 0.0225]          # base left untouched
    assert episode_seed(0, 'move_card', 1) == episode_seed(0, 'move_card', 1)
    assert len({episode_seed(0, t, i) for t in TASKS for i in range(50)}) == 150


def test_mix_uses_both_regions(cfg):
    mixed = cfg.with_overrides(region='mix', wide_fraction=0.5)
    regions = {randomise(base_scene('move_card'), 'move_card', mixed, s).params['region']
               for s in range(20)}
    assert regions == {'id', 'wide'}


def test_scaled_cameras_keep_the_projection(cfg):
    scene = base_scene('move_card')
    small = scale_cameras(scene, 0.5)
    for name, cam in scene.cameras.items():
        s = small.cameras[name]
        assert (s.width, s.height) == (cam.width // 2, cam.height // 2)
        p = np.array([0.1, -0.05, 1.0])                      # a point in the camera frame
        uv = (cam.K @ p)[:2] / p[2]
        uv_s = (s.K @ p)[:2] / p[2]
        assert np.allclose((uv_s + 0.5) * 2 - 0.5, uv, atol=1e-9)


def test_bad_inputs_give_clear_errors(cfg):
    with pytest.raises(RandomiseError, match='lacks task objects'):
        randomise(base_scene('move_card'), 'stack_blocks', cfg, 0)
    with pytest.raises(RandomiseError, match='no layout rule'):
        randomise(base_scene('move_card'), 'juggle', cfg, 0)
    with pytest.raises(GenerationConfigError, match='failures'):
        GenerationConfig.from_dict({**cfg.to_dict(), 'failures': 'keep'})
    with pytest.raises(GenerationConfigError, match='regions.wide'):
        GenerationConfig.from_dict({'tasks': {'t': {'regions': {'id': {'x': [0, 1],
                                                                       'y': [0, 1]}}}}})


def _textured(cfg, **table_texture):
    """cfg with randomise.table_texture replaced (other randomisation as configured)."""
    rcfg = {**cfg.randomise, 'table_texture': {**cfg.randomise['table_texture'],
                                               **table_texture}}
    return cfg.with_overrides(randomise=rcfg)


def test_table_texture_is_seeded_recorded_and_varies(cfg):
    base = base_scene('move_card')
    on = _textured(cfg, enabled=True)
    a = randomise(base, 'move_card', on, 5)
    assert a.params == randomise(base, 'move_card', on, 5).params      # same seed, same draw
    tcfg = on.randomise['table_texture']
    draws = [randomise(base, 'move_card', on, episode_seed(1, 'move_card', i)) for i in range(40)]
    kinds = {r.params['table_texture']['kind'] for r in draws}
    assert kinds == set(tcfg['kinds'])                                  # every kind comes up
    textured = [r for r in draws if r.params['table_texture']['kind'] != 'none']
    assert len({r.params['table_texture']['scale'] for r in textured}) == len(textured)
    for r in textured:
        t = r.scene.table_texture
        assert r.params['table_texture'] == t.to_dict()                 # metadata = scene
        assert tcfg['scale'][0] <= t.scale <= tcfg['scale'][1]
        gap = np.abs(np.subtract(t.color2, r.scene.table_color)).max()
        assert gap >= tcfg['color2_contrast'][0] - tcfg['color2_jitter'] - 1e-9 or \
            min(t.color2) == 0.0 or max(t.color2) == 1.0                # unless clipped
    for r in draws:
        if r.params['table_texture']['kind'] == 'none':
            assert r.scene.table_texture is None                        # renders flat


def test_table_texture_switch_leaves_the_other_draws_alone(cfg):
    base = base_scene('stack_blocks')
    on = randomise(base, 'stack_blocks', _textured(cfg, enabled=True), 9)
    off = randomise(base, 'stack_blocks', _textured(cfg, enabled=False), 9)
    assert off.scene.table_texture is None and off.params['table_texture'] == {'kind': 'none'}
    strip = ('table_texture',)
    assert {k: v for k, v in on.params.items() if k not in strip} == \
        {k: v for k, v in off.params.items() if k not in strip}
    only = randomise(base, 'stack_blocks', _textured(cfg, kinds=['checker']), 9)
    assert only.scene.table_texture.kind == 'checker'


def test_bad_table_texture_config_is_named(cfg):
    base = base_scene('shake_bottle')
    for bad, message in (({'kinds': ['plaid']}, 'plaid'),
                         ({'kinds': {'checker': 0}}, 'weights'),
                         ({'scale': [0.0, 0.1]}, 'scale'),
                         ({'color2_contrast': [0.4]}, 'color2_contrast')):
        with pytest.raises(RandomiseError, match=message):
            randomise(base, 'shake_bottle', _textured(cfg, enabled=True, **bad), 0)


def _hue(rgb) -> float:
    import colorsys
    return 360.0 * colorsys.rgb_to_hsv(*rgb)[0]


def test_recolouring_paints_a_share_of_cards_any_hue_but_the_held_out_ones(cfg):
    base = base_scene('move_card')
    rc = cfg.randomise['recolour']['move_card']
    draws = [randomise(base, 'move_card', cfg, episode_seed(9, 'move_card', i), 'workspace')
             for i in range(200)]
    painted = [r for r in draws if r.params['recoloured']]
    assert 0.4 <= len(painted) / len(draws) <= 0.6               # share 0.5
    hues = [_hue(r.scene.objects['card'].color) for r in painted]
    assert not any(hue_excluded(h, rc['exclude_hue_deg']) for h in hues)
    assert any(h < 90 for h in hues) and any(h > 270 for h in hues)   # the rest of the circle
    assert any(120 < h < 240 for h in hues)
    for r in draws:                       # what the params say is what the scene holds
        assert r.params['objects']['card']['color'] == r.scene.objects['card'].color
    plain = [r.scene.objects['card'].color for r in draws if not r.params['recoloured']]
    assert all(min(c) > 0.7 for c in plain)                      # the white card, jittered


def test_recolouring_leaves_every_other_draw_of_the_seed_as_it_was(cfg):
    """Drawn after everything else: layouts, textures and lights of a seed do not move, and a
    task without recolouring draws exactly what it drew before."""
    off = cfg.with_overrides(randomise={k: v for k, v in cfg.randomise.items()
                                        if k != 'recolour'})
    for task in TASKS:
        base = base_scene(task)
        for i in range(5):
            seed = episode_seed(2, task, i)
            a, b = randomise(base, task, cfg, seed), randomise(base, task, off, seed)
            assert a.target == b.target and a.light_scale == b.light_scale
            for key in ('table_texture', 'table_color', 'cameras', 'distractors'):
                assert a.params[key] == b.params[key], key
            for name, o in a.params['objects'].items():
                assert o['pos'] == b.params['objects'][name]['pos']
                if not a.params['recoloured']:
                    assert o['color'] == b.params['objects'][name]['color']


@pytest.mark.parametrize('bands, hue, inside', [
    ([[-35, 35]], 0.0, True), ([[-35, 35]], 330.0, True), ([[-35, 35]], 36.0, False),
    ([[-35, 35]], 324.0, False), ([[100, 140], [200, 220]], 210.0, True), ([], 10.0, False)])
def test_hue_bands_wrap_round_zero(bands, hue, inside):
    assert hue_excluded(hue, bands) is inside


def test_a_recolouring_that_leaves_no_hue_is_refused(cfg):
    bad = cfg.with_overrides(randomise={**cfg.randomise, 'recolour': {'move_card': {
        'share': 1.0, 'exclude_hue_deg': [[0, 360]]}}})
    with pytest.raises(RandomiseError, match='recolour.move_card.exclude_hue_deg'):
        for i in range(5):
            randomise(base_scene('move_card'), 'move_card', bad, i)


def test_appearance_variant_redraws_the_look_and_leaves_the_scene(cfg):
    """The neural simulator's extra pairs: the aligned scene with another look, nothing moved."""
    base = base_scene('move_card')
    draws = [appearance_variant(base, cfg, episode_seed(5000, 'episode_0000', k))
             for k in range(1, 9)]
    assert draws[0].params == appearance_variant(
        base, cfg, episode_seed(5000, 'episode_0000', 1)).params          # seeded
    for r in draws:
        assert r.scene.objects.keys() == base.objects.keys()
        for name, o in r.scene.objects.items():                           # objects as aligned
            b = base.objects[name]
            assert (o.pos, o.quat, o.size, o.color) == (b.pos, b.quat, b.size, b.color)
        assert r.scene.markers.keys() == base.markers.keys()
        assert r.scene.task == base.task
        lo, hi = cfg.randomise['light_scale']
        assert lo <= r.light_scale <= hi
        jitter = cfg.randomise['camera_position_jitter']
        for cam, c in r.scene.cameras.items():
            shift = np.subtract(c.T_base_camera, base.cameras[cam].T_base_camera)[:3, 3]
            assert np.abs(shift).max() <= jitter + 1e-12
    assert len({tuple(r.scene.table_color) for r in draws}) == len(draws)   # looks differ
    assert {r.params['table_texture']['kind'] for r in draws} - {'none'}    # some textured
    assert base.table_texture is None and base.provenance.get('appearance_variant') is None
