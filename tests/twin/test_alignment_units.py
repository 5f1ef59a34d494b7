"""Pure parts of alignment: camera geometry, sheet parsing, colour distances, yaw symmetry."""
from __future__ import annotations

import numpy as np
import pytest

from comsim_twin.alignment import AlignmentError, load_sheet
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
