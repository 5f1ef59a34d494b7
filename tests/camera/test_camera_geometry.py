"""Shared camera geometry: a point rendered by MuJoCo lands where cv2.projectPoints says."""
import os

import numpy as np
import pytest

os.environ.setdefault('MUJOCO_GL', 'egl')

import mujoco  # noqa: E402

from comsim_core.camera import (  # noqa: E402
    OPENCV_TO_MUJOCO,
    Lens,
    configure_camera,
    mujoco_intrinsics,
    pose_matrix,
    project_points,
)

W, H = 160, 120
K = np.array([[150.0, 0.0, 83.3], [0.0, 149.2, 57.8], [0.0, 0.0, 1.0]])
D_BARREL = np.array([-0.12, 0.08, 0.0008, -0.0006, -0.02])


def _look_at(position, target):
    z = np.asarray(target, float) - position
    z /= np.linalg.norm(z)
    x = np.cross(z, [0.0, 0.0, 1.0])
    x /= np.linalg.norm(x)
    return np.stack([x, np.cross(z, x), z], axis=1)   # columns: x right, y down, z forward


T_CAM = pose_matrix(_look_at(np.array([0.9, 0.2, 0.6]), [0.3, 0.0, 0.05]), [0.9, 0.2, 0.6])


def test_project_points_is_the_pinhole_formula():
    pts = np.array([[0.3, 0.0, 0.05], [0.2, 0.1, 0.2], [0.5, -0.2, 0.0]])
    uv = project_points(pts, K, None, T_CAM)
    cam = (np.linalg.inv(T_CAM) @ np.c_[pts, np.ones(3)].T)[:3]
    manual = (K @ cam / cam[2])[:2].T
    np.testing.assert_allclose(uv, manual, atol=1e-9)
    # the look-at target projects near the principal point
    assert np.linalg.norm(uv[0] - K[:2, 2]) < 1e-6


def test_lens_without_distortion_is_a_plain_crop():
    lens = Lens(K, np.zeros(5), W, H)
    assert (lens.pad_x, lens.pad_y) == (0, 0)
    img = np.random.default_rng(0).integers(0, 255, (H, W, 3), dtype=np.uint8)
    np.testing.assert_array_equal(lens.distort(img), img)
    np.testing.assert_array_equal(lens.crop(img), img)


def test_barrel_lens_pads_and_maps_principal_point_to_itself():
    lens = Lens(K, D_BARREL, W, H)
    assert lens.pad_x > 0 and lens.pad_y > 0
    assert (lens.render_width, lens.render_height) == (W + 2 * lens.pad_x, H + 2 * lens.pad_y)
    u, v = int(round(K[0, 2])), int(round(K[1, 2]))
    # near the principal point distortion is negligible: the map reads the same pixel (+ pad)
    assert abs(lens.map_x[v, u] - (u + lens.pad_x)) < 0.05
    # barrel: a raw corner pixel looks further out in the ideal image
    assert lens.map_x[0, 0] < lens.pad_x and lens.map_y[0, 0] < lens.pad_y
    labels = np.zeros((lens.render_height, lens.render_width), np.uint16)
    labels[:, lens.render_width // 2:] = 7
    out = lens.distort_labels(labels)
    assert out.shape == (H, W) and set(np.unique(out)) == {0, 7}


def test_lens_rejects_bad_input():
    with pytest.raises(ValueError, match='5 plumb_bob'):
        Lens(K, np.zeros(4), W, H)
    with pytest.raises(ValueError, match='positive'):
        Lens(K, np.zeros(5), 0, H)


def test_intrinsics_include_half_pixel_shift():
    intr = mujoco_intrinsics(K, W, H, 3, 2)
    assert intr.resolution == (W + 6, H + 4)
    assert intr.principal_pixel == pytest.approx(((W + 6) / 2 - (K[0, 2] + 3 + 0.5),
                                                  (H + 4) / 2 - (K[1, 2] + 2 + 0.5)))


def _world(lens: Lens):
    spec = mujoco.MjSpec()
    spec.stat.extent = 2.0   # near/far clipping scale with the extent; one ball is tiny
    spec.visual.headlight.ambient = [1.0, 1.0, 1.0]
    spec.visual.headlight.diffuse = [0.0, 0.0, 0.0]
    body = spec.worldbody.add_body()
    body.name = 'ball'
    body.mocap = True
    geom = body.add_geom()
    geom.type = mujoco.mjtGeom.mjGEOM_SPHERE
    geom.size = [0.009, 0.0, 0.0]
    geom.rgba = [1.0, 1.0, 1.0, 1.0]
    cam = spec.worldbody.add_camera()
    cam.name = 'cam'
    configure_camera(cam, lens, T_CAM)
    spec.visual.global_.offwidth = lens.render_width
    spec.visual.global_.offheight = lens.render_height
    model = spec.compile()
    return model, mujoco.MjData(model)


def _centroid(img):
    ys, xs = np.nonzero(img.max(axis=2) > 100)
    assert len(xs) >= 3, 'ball not visible'
    return np.array([xs.mean(), ys.mean()])


def test_configured_mujoco_camera_matches_opencv_projection():
    lens = Lens(K, D_BARREL, W, H)
    model, data = _world(lens)
    cam_id = model.camera('cam').id
    mujoco.mj_forward(model, data)
    np.testing.assert_allclose(data.cam_xmat[cam_id].reshape(3, 3),
                               T_CAM[:3, :3] @ OPENCV_TO_MUJOCO, atol=1e-9)
    renderer = mujoco.Renderer(model, height=lens.render_height, width=lens.render_width)
    try:
        checked = 0
        for p in ([0.3, 0.0, 0.05], [0.25, 0.12, 0.1], [0.45, -0.15, 0.02], [0.2, -0.1, 0.2]):
            ideal = project_points(np.array([p]), K, None, T_CAM)[0]
            raw = project_points(np.array([p]), K, D_BARREL, T_CAM)[0]
            if not (8 < raw[0] < W - 8 and 8 < raw[1] < H - 8):
                continue
            data.mocap_pos[0] = p
            mujoco.mj_forward(model, data)
            renderer.update_scene(data, camera='cam')
            padded = renderer.render()
            assert np.linalg.norm(_centroid(lens.crop(padded)) - ideal) < 0.4, (p, ideal)
            assert np.linalg.norm(_centroid(lens.distort(padded)) - raw) < 0.4, (p, raw)
            checked += 1
        assert checked >= 3
    finally:
        renderer.close()
