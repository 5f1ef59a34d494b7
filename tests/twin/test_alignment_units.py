"""Pure parts of alignment: camera geometry, sheet parsing, colour distances, yaw symmetry."""
from __future__ import annotations

import numpy as np
import pytest
import yaml

from comsim_twin.alignment import AlignmentError, load_sheet
from comsim_twin.alignment.cli import load_cameras
from comsim_twin.alignment.colours import colour_distance, delta_e76, exposure_gain
from comsim_twin.alignment.geometry import (
    camera_centre,
    fuse_rays_on_plane,
    pixel_rays,
    pixels_to_plane,
    project,
)
from comsim_twin.alignment.localise import wrap_yaw, yaw_period
from comsim_twin.alignment.sheet import parse_sheet
from comsim_twin.calibration import write_camera_yaml
from comsim_twin.scene import TwinCamera


def _cam(name: str, pos, look_at, D=(-0.1, 0.07, 0.0005, -0.0004, -0.02)) -> TwinCamera:
    pos, look_at = np.asarray(pos, float), np.asarray(look_at, float)
    z = (look_at - pos) / np.linalg.norm(look_at - pos)
    x = np.cross(z, [0, 0, 1.0])
    x /= np.linalg.norm(x)
    T = np.eye(4)
    T[:3, :3] = np.c_[x, np.cross(z, x), z]
    T[:3, 3] = pos
    K = np.array([[290.0, 0, 160], [0, 290, 120], [0, 0, 1]])
    return TwinCamera(name, 320, 240, K, np.asarray(D, float), T)


def test_project_and_back_project_round_trip():
    cam = _cam('a', [0.9, 0.1, 0.6], [0.35, 0.0, 0.0])
    rng = np.random.default_rng(0)
    pts = np.c_[rng.uniform(0.25, 0.5, 20), rng.uniform(-0.15, 0.15, 20), np.full(20, 0.03)]
    uv = project(cam, pts)
    back = pixels_to_plane(cam, uv, 0.03)
    assert np.abs(back - pts).max() < 1e-5


def test_two_rays_fuse_to_the_point():
    p = np.array([0.4, -0.05, 0.025])
    cams = [_cam('a', [0.9, 0.1, 0.6], [0.35, 0, 0]), _cam('b', [0.35, -0.7, 0.5], [0.35, 0, 0])]
    noisy = [project(c, p[None])[0] + d for c, d in zip(cams, ([0.4, -0.3], [-0.2, 0.5]))]
    rays = [pixel_rays(c, uv[None])[0] for c, uv in zip(cams, noisy)]
    xy = fuse_rays_on_plane([camera_centre(c) for c in cams], rays, p[2])
    assert np.linalg.norm(xy - p[:2]) < 0.003
    exact = [pixel_rays(c, project(c, p[None]))[0] for c in cams]
    assert np.allclose(fuse_rays_on_plane([camera_centre(c) for c in cams], exact, p[2]),
                       p[:2], atol=1e-6)


def test_sheet_lists_every_task_and_rejects_bad_entries():
    sheet = load_sheet()
    assert set(sheet.tasks) == {'stack_blocks', 'move_card', 'shake_bottle'}
    assert sheet.objects('shake_bottle', 'tall')['bottle'].neck == (0.012, 0.015)
    base = {'format': 'comsim-object-sheet/1', 'colours': {'red': [1, 0, 0]}}
    bad_size = {**base, 'tasks': {'t': {'default': {'o': {'shape': 'box', 'size': [0.1, 0.1],
                                                          'colour': 'red'}}}}}
    with pytest.raises(AlignmentError, match='size .* wrong for a box'):
        parse_sheet(bad_size)
    bad_colour = {**base, 'tasks': {'t': {'default': {'o': {'shape': 'cylinder',
                                                            'size': [0.1, 0.1],
                                                            'colour': 'mauve'}}}}}
    with pytest.raises(AlignmentError, match="colour 'mauve' not in"):
        parse_sheet(bad_colour)
    with pytest.raises(AlignmentError, match='not an object sheet'):
        parse_sheet({'tasks': {}})


def test_colour_distance_is_shading_tolerant_but_tells_white_from_grey():
    red, white, grey = np.array([0.85, 0.15, 0.12]), np.array([0.95] * 3), np.array([0.35] * 3)
    assert colour_distance(red * 0.6, red) < 0.01                 # a shaded face
    assert colour_distance(red * 0.6, red) < colour_distance(red * 0.6, white)
    assert colour_distance(np.array([0.9] * 3), white) < colour_distance(np.array([0.9] * 3), grey)
    assert colour_distance(np.array([0.3] * 3), grey) < colour_distance(np.array([0.3] * 3), white)
    gain = exposure_gain(np.array([120.0, 100.0, 60.0]), np.array([0.6, 0.5, 0.3]))
    assert np.allclose(gain, 200.0)
    assert delta_e76(red, red) == 0 and delta_e76(red, white) > 50


def test_yaw_symmetry():
    sheet = load_sheet()
    block = sheet.objects('stack_blocks')['block_top']
    card = sheet.objects('move_card')['card']
    bottle = sheet.objects('shake_bottle')['bottle']
    assert yaw_period(block) == pytest.approx(np.pi / 2)
    assert yaw_period(card) == pytest.approx(np.pi) and yaw_period(bottle) == 0
    assert wrap_yaw(np.pi / 2 + 0.1, np.pi / 2) == pytest.approx(0.1)
    assert wrap_yaw(-np.pi + 0.2, np.pi) == pytest.approx(0.2)


# -- table markers: the sheet entry, the scene YAML, the MuJoCo twin, generation -------------
def _marker_scene(with_marker: bool = True):
    from comsim_twin.scene import TwinMarker, TwinObject, TwinScene
    cam = _cam('front', [0.95, 0.0, 0.55], [0.4, 0.0, 0.0])
    card = TwinObject('card', 'box', [0.045, 0.03, 0.002], [0.95, 0.95, 0.93], [0.36, 0.1, 0.002])
    markers = {'target_zone': TwinMarker('target_zone', [0.06, 0.05], [0.2, 0.75, 0.3],
                                         [0.42, -0.05], 0.3)} if with_marker else {}
    return TwinScene(table_size=[0.6, 0.5], table_center=[0.35, 0.0], cameras={'front': cam},
                     objects={'card': card}, markers=markers, task='move_card')


def test_sheet_lists_the_move_card_zone_as_a_marker():
    sheet = load_sheet()
    zone = sheet.markers('move_card')['target_zone']
    assert zone.size == (0.06, 0.05) and zone.colour == 'green'
    assert zone.as_object().half_height < 0.001 and sheet.markers('stack_blocks') == {}
    data = {'format': 'comsim-object-sheet/1', 'colours': {'red': [1, 0, 0]},
            'markers': {'t': {'z': {'shape': 'rect', 'size': [0.05], 'colour': 'red'}}}}
    with pytest.raises(AlignmentError, match='half x, half y'):
        parse_sheet(data)


def test_markers_round_trip_and_old_scenes_have_none(tmp_path):
    from comsim_twin.scene import SceneError, TwinScene
    scene = _marker_scene()
    loaded = TwinScene.load(scene.save(tmp_path / 'scene.yaml'))
    assert loaded.to_dict() == scene.to_dict()
    assert loaded.markers['target_zone'].yaw == pytest.approx(0.3)
    old = _marker_scene(False).to_dict()
    assert 'markers' not in old and TwinScene.from_dict(old).markers == {}
    bad = scene.to_dict()
    bad['markers']['target_zone']['size'] = [0.06]
    with pytest.raises(SceneError, match='markers.target_zone'):
        TwinScene.from_dict(bad)


def test_marker_is_drawn_segmented_and_never_touched():
    import mujoco

    from comsim_twin.backends import make_backend
    with_m, without = make_backend('mujoco'), make_backend('mujoco')
    try:
        with_m.build(_marker_scene())
        without.build(_marker_scene(False))
        model = with_m.model
        g = model.geom('target_zone').id
        assert model.geom_contype[g] == 0 and model.geom_conaffinity[g] == 0
        assert set(with_m.object_states()) == {'card'}
        seg = with_m.render_segmentation('front')
        assert seg['target_zone'].sum() > 200 and not (seg['target_zone'] & seg['card']).any()
        diff = np.abs(with_m.render('front').astype(int) - without.render('front').astype(int))
        assert diff.sum(axis=2)[seg['target_zone']].mean() > 60     # green on wood
        # the card slides over the zone as over bare table: no contact with it
        with_m.set_object_pose('card', [0.42, -0.05, 0.0021])
        with_m.step(50)
        ids = {int(c) for c in with_m.data.contact.geom[:with_m.data.ncon].ravel()}
        assert g not in ids
        assert with_m.object_states()['card']['pos'][2] == pytest.approx(0.002, abs=5e-4)
        assert mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, 'target_zone') == -1
    finally:
        with_m.close()
        without.close()


def test_generated_move_card_scene_draws_the_zone_it_checks():
    from comsim_twin.generation.config import GenerationConfig
    from comsim_twin.generation.randomise import randomise
    from comsim_twin.generation.success import SuccessMonitor
    cfg = GenerationConfig.load()
    base = _marker_scene()
    base.markers['target_zone'].size = [0.055, 0.045]       # the aligned (measured) zone
    reg = cfg.task('move_card')['regions']['id']
    for seed in range(10):
        r = randomise(base, 'move_card', cfg, seed, 'id')
        zone = r.scene.markers['target_zone']
        assert zone.pos == r.target['zone_center'] and zone.size == r.target['zone_half_size']
        assert zone.size == [0.055, 0.045] and zone.color == [0.2, 0.75, 0.3]
        assert reg['x'][0] <= zone.pos[0] <= reg['x'][1]
        assert reg['y'][0] <= zone.pos[1] <= reg['y'][1]
        assert r.params['markers']['target_zone']['pos'] == zone.pos
        mon = SuccessMonitor('move_card', {'card': r.scene.objects['card']}, r.target)
        at = {'card': {'pos': [*zone.pos, 0.002], 'quat': [1, 0, 0, 0], 'lin_vel': [0, 0, 0],
                       'ang_vel': [0, 0, 0]}}
        assert mon.check(at)[0]
        at['card']['pos'][0] += zone.size[0] + 0.005
        assert not mon.check(at)[0]
    plain = randomise(_marker_scene(False), 'move_card', cfg, 0, 'id')
    assert plain.scene.markers['target_zone'].size == cfg.task('move_card')['zone_half_size']


def test_calibration_directory_reads_flat_and_calibrate_camera_files(tmp_path):
    front = _cam('front', [1.0, 0.0, 0.6], [0.4, 0.0, 0.0])
    side = _cam('side', [0.4, -0.9, 0.6], [0.4, 0.0, 0.0])
    (tmp_path / 'front.yaml').write_text(yaml.safe_dump({**front.to_dict(),
                                                         'topic': '/cameras/front/image_raw'}))
    write_camera_yaml(tmp_path / 'side.yaml', 'side', side.width, side.height, side.K, side.D,
                      side.T_base_camera)          # what comsim-calibrate writes
    (tmp_path / 'notes.yaml').write_text('lab: notes\n')     # neither: not a camera
    cams = load_cameras(tmp_path)
    assert sorted(cams) == ['front', 'side']
    assert cams['front'].topic == '/cameras/front/image_raw' and cams['side'].topic == ''
    for got, want in ((cams['front'], front), (cams['side'], side)):
        assert (got.width, got.height) == (want.width, want.height)
        np.testing.assert_allclose(got.K, want.K)
        np.testing.assert_allclose(got.D, want.D)
        np.testing.assert_allclose(got.T_base_camera, want.T_base_camera)


@pytest.mark.parametrize('change,message', [
    ({'T_base_cam': [0.0] * 16}, r"front.yaml: unknown key\(s\) T_base_cam"),
    ({'width': 'wide'}, r"front.yaml: width: expected an integer, got 'wide'"),
    ({'D': [0.0] * 4}, r'front.yaml: D: expected a list of 5 numbers'),
])
def test_bad_flat_camera_file_names_the_key(tmp_path, change, message):
    data = {**_cam('front', [1.0, 0.0, 0.6], [0.4, 0.0, 0.0]).to_dict(), **change}
    (tmp_path / 'front.yaml').write_text(yaml.safe_dump(data))
    with pytest.raises(AlignmentError, match=message):
        load_cameras(tmp_path)
