"""Calibration on synthetic data with known truth: corners projected with known K, D, poses."""
from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest
import yaml

from comsim_core.geometry import pose_difference
from comsim_twin.calibration import (
    CalibrationError,
    ChessBoard,
    calibrate_from_corners,
    calibrate_intrinsics,
    find_corners,
    load_calibration_setup,
    load_twin_camera,
    read_camera_yaml,
    solve_extrinsics,
    write_camera_yaml,
)

ROOT = Path(__file__).resolve().parents[2]
SIZE = (320, 240)
K_TRUE = np.array([[296.0, 0.0, 163.5], [0.0, 294.5, 117.2], [0.0, 0.0, 1.0]])
D_TRUE = np.array([-0.12, 0.085, 0.0008, -0.0006, -0.02])
BOARD = ChessBoard(9, 6, 0.04)


def _rot(rx: float, ry: float, rz: float) -> np.ndarray:
    return cv2.Rodrigues(np.array([rx, 0, 0.0]))[0] @ cv2.Rodrigues(np.array([0, ry, 0.0]))[0] \
        @ cv2.Rodrigues(np.array([0, 0, rz]))[0]


def _held_poses(rng: np.random.Generator, n: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """(rvec, tvec) of boards in front of the camera, all corners inside the image."""
    obj = BOARD.object_points().astype(np.float64)
    centre = obj.mean(axis=0)
    poses = []
    while len(poses) < n:
        R = _rot(*rng.uniform(-0.6, 0.6, 2), rng.uniform(-0.3, 0.3))
        ray = np.array([rng.uniform(-0.45, 0.45), rng.uniform(-0.35, 0.35), 1.0])
        t = ray * rng.uniform(0.4, 0.7) - R @ centre
        rvec = cv2.Rodrigues(R)[0]
        uv, _ = cv2.projectPoints(obj, rvec, t, K_TRUE, D_TRUE)
        if np.all((uv >= 5) & (uv <= np.array(SIZE) - 6)):
            poses.append((rvec, t))
    return poses


def _project(rvec, tvec, rng, noise_px: float) -> np.ndarray:
    uv, _ = cv2.projectPoints(BOARD.object_points().astype(np.float64), rvec, tvec, K_TRUE,
                              D_TRUE)
    return (uv.reshape(-1, 2) + rng.normal(0, noise_px, (BOARD.n_corners, 2))).astype(np.float32)


def _lens_error_px(K, D, corners: list) -> float:
    """Max pixel error of the estimated camera against the true one, over the image area the
    board covered (outside it a plumb_bob fit extrapolates)."""
    pix = np.vstack([c for c in corners if c is not None]).reshape(-1, 1, 2).astype(np.float64)
    rays = cv2.undistortPoints(pix, K_TRUE, D_TRUE).reshape(-1, 2)
    proj, _ = cv2.projectPoints(np.hstack([rays, np.ones((len(rays), 1))]), np.zeros(3),
                                np.zeros(3), K, D)
    return float(np.linalg.norm(proj.reshape(-1, 2) - pix.reshape(-1, 2), axis=1).max())


def test_intrinsics_recovered_from_noisy_corners():
    rng = np.random.default_rng(1)
    corners = [_project(r, t, rng, 0.1) for r, t in _held_poses(rng, 15)]
    res = calibrate_from_corners(corners, BOARD.object_points(), SIZE)
    assert res.rejected_views == {}
    assert res.used_views == list(range(15))
    assert 0.06 < res.rms_px < 0.2                # ~ the 0.1 px per-axis noise, times sqrt(2)
    assert abs(res.K[0, 0] - K_TRUE[0, 0]) < 1.5 and abs(res.K[1, 1] - K_TRUE[1, 1]) < 1.5
    assert abs(res.K[0, 2] - K_TRUE[0, 2]) < 1.5 and abs(res.K[1, 2] - K_TRUE[1, 2]) < 1.5
    # includes the principal point error, which the poses partly absorb: a loose bound
    assert _lens_error_px(res.K, res.D, corners) < 1.0


def test_bad_views_rejected_and_fit_unharmed():
    rng = np.random.default_rng(2)
    corners = [_project(r, t, rng, 0.1) for r, t in _held_poses(rng, 14)]
    corners[3] = corners[3] + rng.normal(0, 3.0, corners[3].shape).astype(np.float32)
    corners[9] = corners[9][::-1].copy()               # corner order scrambled (180 degrees)
    corners[9][:8] = corners[9][:8] + 4.0
    corners.insert(5, None)                            # board not found in one view
    res = calibrate_from_corners(corners, BOARD.object_points(), SIZE)
    assert set(res.rejected_views) == {3, 5, 10}      # indices after the inserted view
    assert res.rejected_views[5] == 'board not found'
    assert 'median' in res.rejected_views[3] and 'median' in res.rejected_views[10]
    assert res.per_view_error_px[3] > 3 * np.median([res.per_view_error_px[i]
                                                     for i in res.used_views])
    assert len(res.used_views) == 12
    assert abs(res.K[0, 0] - K_TRUE[0, 0]) < 1.5 and abs(res.K[0, 2] - K_TRUE[0, 2]) < 1.5
    assert _lens_error_px(res.K, res.D, [corners[i] for i in res.used_views]) < 1.5


def test_too_few_views_is_a_clear_error():
    rng = np.random.default_rng(3)
    corners = [_project(r, t, rng, 0.1) for r, t in _held_poses(rng, 4)] + [None, None]
    with pytest.raises(CalibrationError, match=r'front: only 4 views .* at least 6'):
        calibrate_from_corners(corners, BOARD.object_points(), SIZE, camera='front')


def test_board_never_found_is_a_clear_error():
    rng = np.random.default_rng(4)
    images = [rng.integers(0, 255, (SIZE[1], SIZE[0], 3), dtype=np.uint8) for _ in range(6)]
    with pytest.raises(CalibrationError, match='side: the board was not found in any of the 6'):
        calibrate_intrinsics(images, BOARD, camera='side')


def _board_image(px: int = 24, border: int = 30) -> tuple[np.ndarray, np.ndarray]:
    """A printed board as an image, and its inner corners' pixel positions (board order)."""
    w, h = BOARD.squares_x * px + 2 * border, BOARD.squares_y * px + 2 * border
    img = np.full((h, w), 235, np.uint8)
    for r in range(BOARD.squares_y):
        for c in range(BOARD.squares_x):
            if (r + c) % 2 == 0:
                y0, x0 = border + r * px, border + c * px
                img[y0:y0 + px, x0:x0 + px] = 20
    corners = BOARD.object_points()[:, :2] / BOARD.square_size * px + border + px - 0.5
    return img, corners


@pytest.mark.parametrize('angle', [0.0, 90.0, 180.0, 200.0])
def test_corners_come_back_in_board_order_whatever_the_rotation(angle):
    printed, corners = _board_image()
    h, w = printed.shape
    M = cv2.getRotationMatrix2D((w / 2, h / 2), angle, 0.9)
    M[:, 2] += [(SIZE[0] * 1.3 - w) / 2, (SIZE[1] * 1.3 - h) / 2]
    out = (int(SIZE[0] * 1.3), int(SIZE[1] * 1.3))
    image = cv2.warpAffine(printed, M, out, flags=cv2.INTER_AREA, borderValue=90)
    image = cv2.GaussianBlur(image, (0, 0), 0.7)
    expected = corners @ M[:, :2].T + M[:, 2]
    found = find_corners(np.dstack([image] * 3), BOARD)
    assert found is not None
    assert np.abs(found - expected).max() < 0.3


def test_extrinsics_recovered_jointly_over_placements():
    setup = load_calibration_setup(ROOT / 'config' / 'twin' / 'calibration.yaml')
    rng = np.random.default_rng(5)
    eye, target = np.array([0.95, 0.05, 0.6]), np.array([0.35, 0.1, 0.0])
    z = (target - eye) / np.linalg.norm(target - eye)
    x = np.cross(z, [0, 0, 1.0])
    x /= np.linalg.norm(x)
    T_base_cam = np.eye(4)
    T_base_cam[:3, :3] = np.column_stack([x, np.cross(z, x), z])   # OpenCV optical axes
    T_base_cam[:3, 3] = eye
    T_cam_base = np.linalg.inv(T_base_cam)
    obs = {}
    for name, T_base_board in setup.placements.items():
        T_cam_board = T_cam_base @ T_base_board
        pts = BOARD.object_points().astype(np.float64) @ T_cam_board[:3, :3].T + T_cam_board[:3, 3]
        assert np.all(pts[:, 2] > 0.3)
        uv, _ = cv2.projectPoints(pts, np.zeros(3), np.zeros(3), K_TRUE, D_TRUE)
        obs[name] = (uv.reshape(-1, 2) + rng.normal(0, 0.1, (BOARD.n_corners, 2)),
                     T_base_board)
    T, residuals = solve_extrinsics(obs, K_TRUE, D_TRUE, BOARD)
    dt, da = pose_difference(T, T_base_cam)
    assert dt < 0.002 and da < 0.1
    assert set(residuals) == set(setup.placements)
    assert all(r.rms_px < 0.3 and r.n_corners == BOARD.n_corners for r in residuals.values())
    # a mis-placed board shows up in its residual, not silently in the pose alone
    name = next(iter(obs))
    moved = obs[name][1].copy()
    moved[:3, 3] += [0.02, 0.0, 0.0]                  # the lab says 2 cm further than it was
    obs[name] = (obs[name][0], moved)
    _, bad = solve_extrinsics(obs, K_TRUE, D_TRUE, BOARD)
    assert max(bad, key=lambda n: bad[n].rms_px) == name and bad[name].rms_px > 1.0
    assert bad[name].pose_dt_mm > 10.0


def test_extrinsics_without_views_is_a_clear_error():
    with pytest.raises(CalibrationError, match='front: no table view'):
        solve_extrinsics({}, K_TRUE, D_TRUE, BOARD, camera='front')


def test_camera_yaml_round_trip(tmp_path):
    T = np.eye(4)
    T[:3, :3] = _rot(0.3, -0.2, 1.0)
    T[:3, 3] = [0.9, -0.1, 0.55]
    path = write_camera_yaml(tmp_path / 'front.yaml', 'front', *SIZE, K_TRUE, D_TRUE, T)
    data = yaml.safe_load(path.read_text())
    for key in ('image_width', 'image_height', 'camera_name', 'camera_matrix',
                'distortion_model', 'distortion_coefficients', 'rectification_matrix',
                'projection_matrix', 'T_base_camera'):
        assert key in data
    assert data['distortion_model'] == 'plumb_bob'
    assert data['projection_matrix']['rows'] == 3 and len(data['projection_matrix']['data']) == 12
    cam = load_twin_camera(path, '/cameras/front/image_raw')
    assert (cam.name, cam.width, cam.height, cam.topic) == ('front', 320, 240,
                                                             '/cameras/front/image_raw')
    np.testing.assert_allclose(cam.K, K_TRUE)
    np.testing.assert_allclose(cam.D, D_TRUE)
    np.testing.assert_allclose(cam.T_base_camera, T)
    del data['T_base_camera']
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(CalibrationError, match=r"front.yaml: missing key 'T_base_camera'"):
        read_camera_yaml(path)


def test_setup_file_and_board_checks(tmp_path):
    setup = load_calibration_setup(ROOT / 'config' / 'twin' / 'calibration.yaml')
    assert len(setup.placements) >= 3
    for T in setup.placements.values():        # lying flat, printed face up, on the table top
        np.testing.assert_allclose(T[:3, 2], [0, 0, -1], atol=1e-12)
        assert T[2, 3] == pytest.approx(setup.board.thickness)
    with pytest.raises(CalibrationError, match='must be odd'):
        ChessBoard(8, 6, 0.03)
    bad = tmp_path / 'cal.yaml'
    bad.write_text('board: {squares_x: 9, squares_y: 6}\n')
    with pytest.raises(CalibrationError, match=r"cal.yaml: board: missing key 'square_size'"):
        load_calibration_setup(bad)
    with pytest.raises(CalibrationError, match='unknown board placement'):
        setup.placement('nowhere')


@pytest.mark.parametrize('text,message', [
    ('placements: []\n', r"cal.yaml: missing key 'board'"),
    ('board: {squares_x: 9, squares_y: 6, square_size: 0.04, thick: 0.004}\n',
     r'cal.yaml: board: unknown key\(s\) thick'),
    ('board: {squares_x: 9, squares_y: 6, square_size: 0.04}\n'
     'placements: [{name: a, xy: [0.2], yaw: 0.0}]\n',
     r'cal.yaml: placements\[0\].xy: expected a list of 2 numbers, got \[0.2\]'),
    ('board: {squares_x: 9, squares_y: 6, square_size: 0.04}\n'
     'placements: [{name: a, xy: [0.2, 0.1]}]\n',
     r"cal.yaml: placements\[0\]: missing key 'yaw'"),
    ('board: {squares_x: 9, squares_y: 6, square_size: 0.04}\n'
     'placements: [{name: a, xy: [0.2, 0.1], yaw: 0}, {name: a, xy: [0.3, 0.1], yaw: 0}]\n',
     r'cal.yaml: placements: placement name\(s\) a given more than once'),
    ('board: {squares_x: 8, squares_y: 6, square_size: 0.04}\n',
     r'cal.yaml: board: .*must be odd'),
])
def test_bad_setup_file_names_the_key(tmp_path, text, message):
    bad = tmp_path / 'cal.yaml'
    bad.write_text(text)
    with pytest.raises(CalibrationError, match=message):
        load_calibration_setup(bad)


def test_setup_places_the_board_at_its_yaw_on_the_table_top(tmp_path):
    path = tmp_path / 'cal.yaml'
    path.write_text('board: {squares_x: 9, squares_y: 6, square_size: 0.04, thickness: 0.004}\n'
                    'table_top_z: 0.01\n'
                    'placements: [{name: turned, xy: [0.2, -0.1], yaw: 1.5707963267948966}]\n')
    T = load_calibration_setup(path).placement('turned')
    np.testing.assert_allclose(T[:3, 3], [0.2, -0.1, 0.014])
    np.testing.assert_allclose(T[:3, 0], [0, 1, 0], atol=1e-12)      # board x along base +y
    np.testing.assert_allclose(T[:3, 2], [0, 0, -1], atol=1e-12)     # z into the table
