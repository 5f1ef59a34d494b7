"""MujocoTwin alone: kinematics equal FK, position control tracks, objects rest on the table."""
import os

import numpy as np
import pytest

os.environ.setdefault('MUJOCO_GL', 'egl')

from comsim_core.geometry import yaw_quat  # noqa: E402
from comsim_twin.backends import make_backend  # noqa: E402
from comsim_twin.backends.base import objects_exposure, scale_lights  # noqa: E402
from comsim_twin.backends.mujoco_backend import MujocoTwin, TwinNotBuiltError  # noqa: E402
from comsim_twin.scene import TwinCamera, TwinMarker, TwinObject, TwinScene  # noqa: E402


def _camera() -> TwinCamera:
    """A camera in front of the table looking at the objects (OpenCV optical frame)."""
    eye, target = np.array([1.1, 0.0, 0.6]), np.array([0.45, 0.0, 0.05])
    z = (target - eye) / np.linalg.norm(target - eye)
    x = np.cross(z, [0.0, 0.0, 1.0])
    x /= np.linalg.norm(x)
    T = np.eye(4)
    T[:3, :3] = np.stack([x, np.cross(z, x), z], axis=1)
    T[:3, 3] = eye
    K = np.array([[200.0, 0.0, 79.5], [0.0, 200.0, 59.5], [0.0, 0.0, 1.0]])
    return TwinCamera('cam', 160, 120, K, np.array([-0.1, 0.05, 0.0, 0.0, 0.0]), T)


def _scene() -> TwinScene:
    return TwinScene(cameras={'cam': _camera()}, objects={
        'cube': TwinObject('cube', 'box', [0.02, 0.02, 0.02], [0.9, 0.1, 0.1], [0.45, 0.1, 0.1]),
        'can': TwinObject('can', 'cylinder', [0.025, 0.04], [0.1, 0.2, 0.9], [0.4, -0.15, 0.2]),
        'bottle': TwinObject('bottle', 'bottle', [0.03, 0.05], [0.2, 0.6, 0.3],
                             [0.55, -0.05, 0.051])})


@pytest.fixture(scope='module')
def twin():
    twin = make_backend('mujoco')
    assert isinstance(twin, MujocoTwin)
    twin.build(_scene())
    yield twin
    twin.close()


def test_build_exposes_names_and_home(twin):
    assert twin.joint_names[-1] == 'gripper' and len(twin.joint_names) == 7
    assert twin.camera_names == ['cam']
    assert twin.object_names == ['cube', 'can', 'bottle']
    assert twin.timestep == pytest.approx(0.002)
    np.testing.assert_allclose(twin.joint_positions(), twin.robot.home)


def test_kinematic_pose_reproduces_fk(twin):
    rng = np.random.default_rng(3)
    robot = twin.robot
    for _ in range(5):
        q = rng.uniform(robot.lower, robot.upper)
        twin.set_joint_positions(q)
        np.testing.assert_allclose(twin.joint_positions(), q, atol=1e-12)
        pos, rot = robot.fk(q)
        site = twin.data.site('robot/tcp')
        np.testing.assert_allclose(site.xpos, pos, atol=1e-9)
        np.testing.assert_allclose(site.xmat.reshape(3, 3), rot, atol=1e-9)


def test_position_commands_track_a_target(twin):
    twin.set_joint_positions(twin.robot.home)
    target = twin.robot.home + np.array([0.3, -0.2, 0.25, 0.4, -0.3, 0.5, -0.02])
    t0 = twin.time
    twin.command_positions(target)
    twin.step(1000)
    assert twin.time - t0 == pytest.approx(2.0)
    q = twin.joint_positions()
    assert np.abs(q[:-1] - target[:-1]).max() < 0.02
    assert abs(q[-1] - target[-1]) < 0.003


def test_objects_fall_and_rest_on_the_table(twin):
    twin.set_joint_positions(twin.robot.home)
    twin.set_object_pose('cube', [0.45, 0.1, 0.1], [1.0, 0.0, 0.0, 0.0])
    twin.set_object_pose('can', [0.4, -0.15, 0.2])
    twin.step(600)
    states = twin.object_states()
    assert states['cube']['pos'][2] == pytest.approx(0.02, abs=2e-3)
    assert states['can']['pos'][2] == pytest.approx(0.04, abs=2e-3)
    assert states['bottle']['pos'][2] == pytest.approx(0.05, abs=2e-3)
    for s in states.values():
        assert np.linalg.norm(s['lin_vel']) < 0.01
        assert set(s) == {'pos', 'quat', 'lin_vel', 'ang_vel'}


def test_set_object_pose_is_exact_and_normalises(twin):
    twin.set_object_pose('cube', [0.3, 0.2, 0.3], [2.0, 0.0, 0.0, 2.0])
    s = twin.object_states()['cube']
    np.testing.assert_allclose(s['pos'], [0.3, 0.2, 0.3])
    np.testing.assert_allclose(s['quat'], [np.sqrt(0.5), 0, 0, np.sqrt(0.5)], atol=1e-12)
    with pytest.raises(KeyError, match='unknown object'):
        twin.set_object_pose('ghost', [0, 0, 0])
    with pytest.raises(ValueError, match='zero norm'):
        twin.set_object_pose('cube', [0, 0, 0], [0, 0, 0, 0])


def test_render_shapes_and_segmentation(twin):
    twin.set_joint_positions(twin.robot.home)
    for name, pos in (('cube', [0.45, 0.1, 0.02]), ('can', [0.4, -0.15, 0.04]),
                      ('bottle', [0.55, -0.05, 0.05])):
        twin.set_object_pose(name, pos)
    for distort in (True, False):
        img = twin.render('cam', distort=distort)
        assert img.shape == (120, 160, 3) and img.dtype == np.uint8
        masks = twin.render_segmentation('cam', distort=distort)
        assert set(masks) == {'cube', 'can', 'bottle'}
        for name, mask in masks.items():
            assert mask.shape == (120, 160) and mask.dtype == bool
            assert mask.sum() > 20, name
            ys, xs = np.nonzero(mask)
            colour = img[ys, xs].astype(float).mean(axis=0)   # flat colour, shaded
            target = np.array(twin.scene.objects[name].color)
            assert np.argmax(colour) == np.argmax(target), name
        assert not np.logical_and(masks['cube'], masks['can']).any()


def test_errors_are_clear(twin):
    with pytest.raises(KeyError, match='unknown camera'):
        twin.render('nope')
    with pytest.raises(ValueError, match='joint values'):
        twin.set_joint_positions(np.zeros(3))
    with pytest.raises(TwinNotBuiltError):
        MujocoTwin().step()
    bad = _scene()
    bad.objects['cube'].size = [0.02, 0.02]
    with pytest.raises(ValueError, match='size of length 3'):
        MujocoTwin().build(bad)
    with pytest.raises(ValueError, match='unknown twin backend'):
        make_backend('gazebo')


def test_close_is_idempotent():
    twin = MujocoTwin()
    twin.build(_scene())
    twin.close()
    twin.close()


def test_building_the_same_scene_again_resets_it_without_recomposing():
    """Replays of one scene reuse the model and renderers but start from the same state."""
    scene = _scene()
    twin = MujocoTwin()
    try:
        twin.build(scene)
        model = twin.model
        first = twin.render(twin.camera_names[0])
        q0 = twin.joint_positions().copy()
        twin.command_positions(q0 + 0.2)
        twin.step(200)
        assert not np.allclose(twin.joint_positions(), q0)
        twin.build(scene)
        assert twin.model is model                       # not recomposed
        np.testing.assert_allclose(twin.joint_positions(), q0)
        assert twin.time == 0.0
        np.testing.assert_array_equal(twin.render(twin.camera_names[0]), first)
        built = twin.model.light_diffuse.copy()
        scale_lights(twin, 0.5)
        scale_lights(twin, 0.5)                           # from the built lights: no compounding
        np.testing.assert_allclose(twin.model.light_diffuse, built * 0.5)
        assert twin.render(twin.camera_names[0]).mean() < first.mean()
        twin.build(scene)                                 # the same scene: its lights as built
        np.testing.assert_array_equal(twin.model.light_diffuse, built)
        np.testing.assert_array_equal(twin.render(twin.camera_names[0]), first)
        twin.close()
        twin.build(scene)                                 # after close: composed anew
        assert twin.model is not model
    finally:
        twin.close()


def test_capture_renders_the_moment_it_was_taken_not_later(twin):
    twin.set_joint_positions(twin.robot.home)
    cube = twin.object_states()['cube']['pos']
    expected = twin.render('cam')
    pending = twin.capture('cam')
    twin.set_object_pose('cube', cube + [0.06, 0.04, 0.0])   # the world moves on
    twin.step(5)
    with pytest.raises(RuntimeError, match='render'):
        pending.image()            # not drawn yet
    pending.render()
    twin.step(5)
    np.testing.assert_array_equal(pending.image(), expected)
    assert pending.image() is pending.image()   # warped once
    changed = np.abs(twin.render('cam').astype(int) - expected).max(axis=-1) > 30
    assert changed.sum() > 100   # the cube did move in view
    twin.set_object_pose('cube', cube)


def test_object_snapshot_is_the_segmentation_of_its_moment_beside_a_pending_render(twin):
    """capture_objects: the objects' ids where render_segmentation shows them, drawn later
    like a capture and pending beside one (its own renderer); arm and table are 0."""
    twin.set_joint_positions(twin.robot.home)
    cube = twin.object_states()['cube']['pos']
    masks = twin.render_segmentation('cam')
    pending_rgb, pending = twin.capture('cam'), twin.capture_objects('cam')
    twin.set_object_pose('cube', cube + [0.06, 0.04, 0.0])    # the world moves on
    pending.render()
    pending_rgb.render()
    labels = pending.image()
    assert labels.shape == (120, 160) and labels.dtype == np.uint8
    expected = np.zeros((120, 160), np.uint8)
    for i, name in enumerate(twin.object_names):
        expected[masks[name]] = i + 1
    np.testing.assert_array_equal(labels, expected)
    assert set(np.unique(labels)) == {0, 1, 2, 3}
    moved = twin.capture_objects('cam')
    moved.render()
    assert (moved.image() == 1).sum() > 20 and not np.array_equal(moved.image(), labels)
    fallback = objects_exposure(type('Seg', (), {        # a backend without the snapshot
        'object_names': twin.object_names,
        'render_segmentation': lambda self, cam: masks})(), 'cam')
    fallback.render()
    np.testing.assert_array_equal(fallback.image(), expected)
    twin.set_object_pose('cube', cube)


def test_step_kinematic_moves_the_arm_exactly_as_placed():
    """Each step starts at q[i] moving at qd[i]; gravity and damping must not bend that motion
    (placing with set_joint_positions and stepping lets them, by about a millimetre-radian)."""
    rng = np.random.default_rng(0)
    a, b = make_backend('mujoco'), make_backend('mujoco')
    try:
        for t in (a, b):
            t.build(_scene())
        q = a.robot.home + np.cumsum(rng.normal(0, 0.002, (50, 7)), axis=0)
        qd = rng.normal(0, 0.5, (50, 7))
        a.step_kinematic(q, qd)
        for qi, qdi in zip(q, qd):
            b.set_joint_positions(qi, qdi)
            b.step(1)
        assert a.time == pytest.approx(b.time) == pytest.approx(50 * a.timestep)
        ideal = q[-1, :6] + qd[-1, :6] * a.timestep
        err_kinematic = np.abs(a.joint_positions()[:6] - ideal).max()
        err_placed = np.abs(b.joint_positions()[:6] - ideal).max()
        assert err_kinematic < 1e-6 < err_placed
        with pytest.raises(ValueError, match='positions and velocities'):
            a.step_kinematic(q[:, :3], qd[:, :3])
    finally:
        a.close()
        b.close()


def test_step_commanded_equals_commanding_and_stepping_one_by_one():
    a, b = make_backend('mujoco'), make_backend('mujoco')
    try:
        for t in (a, b):
            t.build(_scene())
        targets = a.robot.home + np.linspace(0, 1, 40)[:, None] * np.array(
            [0.3, -0.2, 0.25, 0.4, -0.3, 0.5, -0.02])
        targets[5, 0] = 99.0   # out of limits: clamped the same way
        a.step_commanded(targets)
        for q in targets:
            b.command_positions(q)
            b.step(1)
        np.testing.assert_array_equal(a.data.qpos, b.data.qpos)
        np.testing.assert_array_equal(a.data.ctrl, b.data.ctrl)
        with pytest.raises(ValueError, match='position targets'):
            a.step_commanded(targets[:, :3])
    finally:
        a.close()
        b.close()


def test_marker_yaw_turns_it_counter_clockwise_about_z():
    """yaw_quat is MuJoCo's convention (w first, +yaw = x towards +y), so a marker's long side
    points where its yaw says."""
    yaw = 0.7
    scene = _scene()
    scene.markers = {'zone': TwinMarker('zone', [0.05, 0.01], [0.1, 0.8, 0.2], [0.4, 0.0], yaw)}
    twin = make_backend('mujoco')
    try:
        twin.build(scene)
        g = twin.model.geom('zone').id
        np.testing.assert_allclose(twin.model.geom_quat[g], yaw_quat(yaw), atol=1e-12)
        x_axis = twin.data.geom_xmat[g].reshape(3, 3)[:, 0]
        np.testing.assert_allclose(x_axis, [np.cos(yaw), np.sin(yaw), 0.0], atol=1e-12)
    finally:
        twin.close()
