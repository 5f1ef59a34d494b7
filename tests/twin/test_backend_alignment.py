"""Twin vs bench lab ground truth: same cameras, poses and arm state -> the same pixels.

The scene is built from the bench lab's TRUE calibration and object poses (tests may read the
hidden truth; comsim_twin may not), so any mismatch is the twin's own geometry error.
"""
import os
from pathlib import Path

import mujoco
import numpy as np
import pytest

os.environ.setdefault('MUJOCO_GL', 'egl')

from comsim_bench_lab.config import LabConfig  # noqa: E402
from comsim_bench_lab.lab import BenchLab  # noqa: E402
from comsim_bench_lab.realism import RealismProfile  # noqa: E402
from comsim_core.camera import Lens  # noqa: E402
from comsim_twin.backends import make_backend  # noqa: E402
from comsim_twin.scene import TwinCamera, TwinObject, TwinScene  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
MIN_PIXELS = 40          # objects smaller than this in a view are not scored
CASES = [('stack_blocks', 2), ('shake_bottle', 5)]
ARM_POSE = np.array([0.35, 0.55, 1.2, 0.3, 1.0, -0.4, 0.02])


def _distortion_only() -> RealismProfile:
    return RealismProfile(table_texture='flat', shadows=False, specular=0.0, extra_lights=[],
                          light_color=np.ones(3), distortion=True, noise_std=0.0, exposure=1.0,
                          white_balance=np.ones(3), blur_sigma=0.0, vignetting=0.0,
                          friction_scale=1.0, damping_scale=1.0, latency_ms=0.0)


def scene_from_truth(lab: BenchLab) -> TwinScene:
    cams = {}
    for name in lab.camera_names:
        info = lab.camera_info(name)
        cams[name] = TwinCamera(name, info.width, info.height, info.K, info.D,
                                info.T_base_camera)
    objects = {}
    for name, o in lab.task_state()['objects'].items():
        shape = 'bottle' if 'neck' in o else o['shape']
        objects[name] = TwinObject(name, shape, o['size'] + o.get('neck', []), o['color'],
                                   o['pos'], o['quat'])
    t = lab.config.table
    return TwinScene(table_size=[t.size[0] / 2, t.size[1] / 2], table_center=list(t.center),
                     table_color=list(t.color), cameras=cams, objects=objects)


@pytest.fixture(scope='module')
def lab():
    lab = BenchLab(LabConfig.load(ROOT / 'config/bench_lab/lab.yaml'),
                   realism=_distortion_only())
    yield lab
    lab.close()


@pytest.fixture(scope='module')
def twin():
    twin = make_backend('mujoco')
    yield twin
    twin.close()


def _segment(model, data, lens: Lens, camera: str) -> np.ndarray:
    """Padded geom-id image (-1 = nothing) straight from MuJoCo's segmentation renderer."""
    renderer = mujoco.Renderer(model, height=lens.render_height, width=lens.render_width)
    try:
        renderer.enable_segmentation_rendering()
        renderer.update_scene(data, camera=camera)
        seg = renderer.render()
    finally:
        renderer.close()
    ids = seg[..., 0].copy()
    ids[seg[..., 1] != int(mujoco.mjtObj.mjOBJ_GEOM)] = -1
    return ids


def _masks(model, data, lens, camera, objects, distort):
    """Per object and for the whole arm ('robot/' bodies): visible-pixel masks."""
    ids = _segment(model, data, lens, camera)
    body = np.append(model.geom_bodyid, -1)[ids]           # -1 -> last entry
    names = {b: model.body(b).name for b in range(model.nbody)}
    groups = {name: np.zeros(model.nbody + 1, bool) for name in [*objects, 'arm']}
    for b, n in names.items():
        if n in groups:
            groups[n][b] = True
        if n.startswith('robot/'):
            groups['arm'][b] = True
    out = {}
    for name, table in groups.items():
        padded = table[body].astype(np.uint8)
        out[name] = (lens.distort_labels(padded) if distort else lens.crop(padded)) > 0
    return out


def _iou(a, b):
    union = np.logical_or(a, b).sum()
    return 1.0 if union == 0 else np.logical_and(a, b).sum() / union


def _chroma_mask(img, color, tol=0.06):
    """Pixels whose chromaticity (r, g, b)/sum is near the flat object colour's."""
    rgb = img.astype(float) + 1e-6
    chroma = rgb / rgb.sum(axis=2, keepdims=True)
    c = np.asarray(color, float)
    return np.abs(chroma - c / c.sum()).max(axis=2) < tol


@pytest.mark.parametrize('task,seed', CASES)
def test_twin_matches_bench_lab_pixels(lab, twin, task, seed):
    lab.reset(task, seed)
    lab._set_robot(ARM_POSE)           # same non-home arm pose in both worlds
    mujoco.mj_forward(lab.model, lab.data)
    scene = scene_from_truth(lab)
    twin.build(scene)
    twin.set_joint_positions(ARM_POSE)
    scored = 0
    for cam in lab.camera_names:
        info = lab.camera_info(cam)
        lens = Lens(info.K, info.D, info.width, info.height)
        for distort in (False, True):
            truth = _masks(lab.model, lab.data, lens, cam, scene.objects, distort)
            ours = twin.render_segmentation(cam, distort=distort)
            twin_arm = _masks(twin.model, twin.data, twin.lens(cam), cam, [],
                              distort)['arm']
            assert truth['arm'].sum() > 500, 'arm should be in view'
            assert _iou(truth['arm'], twin_arm) >= 0.97, (cam, distort)
            for name in scene.objects:
                if truth[name].sum() < MIN_PIXELS:
                    continue
                assert _iou(truth[name], ours[name]) >= 0.9, (cam, name, distort)
                scored += 1
            # RGB: the flat-coloured objects' silhouettes in the rendered images agree too
            bench_rgb = lab.render(cam) if distort else lab.render_plain(cam)
            twin_rgb = twin.render(cam, distort=distort)
            for name, obj in scene.objects.items():
                if truth[name].sum() < MIN_PIXELS:
                    continue
                a, b = _chroma_mask(bench_rgb, obj.color), _chroma_mask(twin_rgb, obj.color)
                assert a.sum() > 0.5 * truth[name].sum(), (cam, name)
                assert _iou(a, b) >= 0.85, (cam, name, distort, _iou(a, b))
    assert scored >= 2


def test_segmentation_sees_occlusion(lab, twin):
    lab.reset('stack_blocks', 2)
    scene = scene_from_truth(lab)
    twin.build(scene)
    back = twin.object_states()['block_bottom']['pos']
    full = twin.render_segmentation('front')['block_bottom'].sum()
    eye = scene.cameras['front'].T_base_camera[:3, 3]
    twin.set_object_pose('block_top', back + 0.25 * (eye - back))   # on the line of sight
    masks = twin.render_segmentation('front')
    assert full > MIN_PIXELS
    assert masks['block_bottom'].sum() < 0.2 * full
    assert not np.logical_and(masks['block_bottom'], masks['block_top']).any()


def _table_point_at_pixel(cam: TwinCamera, uv, z: float) -> np.ndarray:
    """Base-frame point at height z seen at raw (distorted) pixel uv."""
    import cv2
    ray = cv2.undistortPoints(np.array([[uv]], float), cam.K, cam.D).reshape(2)
    R, t = cam.T_base_camera[:3, :3], cam.T_base_camera[:3, 3]
    d = R @ np.array([ray[0], ray[1], 1.0])
    return t + d * (z - t[2]) / d[2]


@pytest.mark.parametrize('camera', ['front', 'side'])
def test_distortion_aligns_objects_near_the_image_edge(lab, twin, camera):
    """Near the border barrel distortion moves pixels by several px: only the distorted twin
    view matches the lab's raw image there."""
    lab.reset('stack_blocks', 2)
    scene = scene_from_truth(lab)
    cam = scene.cameras[camera]
    twin.build(scene)
    corners = {'block_top': (0.12 * cam.width, 0.75 * cam.height),
               'block_bottom': (0.88 * cam.width, 0.8 * cam.height)}
    for name, uv in corners.items():
        pos = _table_point_at_pixel(cam, uv, scene.objects[name].size[2])
        adr = lab.model.jnt_qposadr[lab.model.joint(f'{name}_free').id]
        lab.data.qpos[adr:adr + 7] = [*pos, 1.0, 0.0, 0.0, 0.0]
        twin.set_object_pose(name, pos)
    mujoco.mj_forward(lab.model, lab.data)
    lens = Lens(cam.K, cam.D, cam.width, cam.height)
    truth = _masks(lab.model, lab.data, lens, camera, scene.objects, True)
    raw, pinhole = twin.render_segmentation(camera), twin.render_segmentation(camera, False)
    bench_rgb, twin_rgb = lab.render(camera), twin.render(camera)
    for name, obj in scene.objects.items():
        assert truth[name].sum() > MIN_PIXELS, name
        assert _iou(truth[name], raw[name]) >= 0.9, name
        assert _iou(truth[name], pinhole[name]) < 0.8, name    # distortion really matters here
        assert _iou(_chroma_mask(bench_rgb, obj.color), _chroma_mask(twin_rgb, obj.color)) >= 0.85
