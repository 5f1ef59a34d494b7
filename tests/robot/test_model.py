"""RobotModel: kinematics consistency, IK round trips, limits, loading user models."""
import numpy as np
import pytest

from comsim_core.robot import IKError, RobotModel, tool_down_rotation


@pytest.fixture(scope='module')
def robot():
    return RobotModel.load()


def test_default_arm_structure(robot):
    assert robot.joint_names == [f'joint{i}' for i in range(1, 7)] + ['gripper']
    assert robot.arm_joint_names == robot.joint_names[:6]
    assert robot.lower.shape == robot.upper.shape == robot.max_velocity.shape == (7,)
    assert np.all(robot.lower < robot.upper)
    assert 0.03 <= robot.upper[-1] <= 0.05 and robot.lower[-1] == 0.0
    assert np.all(robot.max_velocity > 0)


def test_home_points_down_over_table_with_open_gripper(robot):
    pos, rot = robot.fk(robot.home)
    assert robot.home[-1] == pytest.approx(robot.upper[-1])
    assert 0.2 < pos[0] < 0.6 and 0.1 < pos[2] < 0.5
    assert rot[:, 2] @ np.array([0, 0, -1.0]) > 0.99


def test_reach_about_075(robot):
    q = np.zeros(7)
    pos, _ = robot.fk(q)
    assert 0.85 < pos[2] < 1.05   # straight up: shoulder ~0.2 + reach ~0.76
    q[1] = np.pi / 2
    pos, _ = robot.fk(q)
    assert 0.65 < np.hypot(pos[0], pos[1]) < 0.85


def test_jacobian_matches_finite_differences(robot):
    rng = np.random.default_rng(0)
    q = robot.home.copy()
    q[:6] += rng.uniform(-0.3, 0.3, 6)
    jac = robot.jacobian(q)
    assert jac.shape == (6, 6)
    eps = 1e-6
    p0, r0 = robot.fk(q)
    for i in range(6):
        dq = q.copy()
        dq[i] += eps
        p1, r1 = robot.fk(dq)
        np.testing.assert_allclose((p1 - p0) / eps, jac[:3, i], atol=1e-4)
        skew = (r1 - r0) / eps @ r0.T
        omega = np.array([skew[2, 1], skew[0, 2], skew[1, 0]])
        np.testing.assert_allclose(omega, jac[3:, i], atol=1e-4)


def test_ik_round_trip_random_poses(robot):
    rng = np.random.default_rng(1)
    for _ in range(10):
        q = robot.home.copy()
        q[:6] = rng.uniform(robot.lower[:6] * 0.6, robot.upper[:6] * 0.6)
        pos, rot = robot.fk(q)
        sol = robot.ik(pos, rot, q0=robot.home)
        assert sol.shape == (7,)
        p2, r2 = robot.fk(sol)
        assert np.linalg.norm(p2 - pos) < 2e-3
        assert np.allclose(r2, rot, atol=2e-2)
        assert np.all(sol >= robot.lower - 1e-9) and np.all(sol <= robot.upper + 1e-9)


def test_ik_top_down_over_table(robot):
    for xy in [(0.3, -0.15), (0.5, 0.1), (0.25, 0.35)]:
        target = np.array([*xy, 0.03])
        q = robot.ik(target, tool_down_rotation(np.arctan2(xy[1], xy[0])))
        pos, rot = robot.fk(q)
        assert np.linalg.norm(pos - target) < 2e-3
        assert rot[2, 2] < -0.99


def test_ik_unreachable_raises_with_result(robot):
    with pytest.raises(IKError) as err:
        robot.ik(np.array([2.0, 0.0, 0.3]))
    assert 'unreachable' in str(err.value)
    assert err.value.result.pos_err > 0.5
    res = robot.ik(np.array([2.0, 0.0, 0.3]), raise_on_fail=False)
    assert not res.success


def test_dls_step_realises_twist(robot):
    twist = np.array([0.05, -0.02, 0.03, 0.0, 0.0, 0.1])
    dq = robot.dls_step(robot.home, twist, damping=1e-3)
    np.testing.assert_allclose(robot.jacobian(robot.home) @ dq, twist, atol=1e-3)


def test_clamp(robot):
    q = robot.upper + 1.0
    np.testing.assert_allclose(robot.clamp(q), robot.upper)
    np.testing.assert_allclose(robot.clamp(robot.lower[:6] - 1.0), robot.lower[:6])
    with pytest.raises(ValueError):
        robot.clamp(np.zeros(3))


URDF = """<robot name="two_link">
  <link name="base"/>
  <link name="l1"><inertial><mass value="1"/>
    <inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="l2"><inertial><origin xyz="0 0 0.3"/><mass value="1"/>
    <inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="a" type="revolute"><parent link="base"/><child link="l1"/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" effort="10" velocity="1.5"/></joint>
  <joint name="b" type="revolute"><parent link="l1"/><child link="l2"/>
    <origin xyz="0 0 0.2"/><axis xyz="0 1 0"/>
    <limit lower="-2" upper="2" effort="10" velocity="2.5"/></joint>
</robot>"""


def test_load_user_urdf(tmp_path):
    path = tmp_path / 'two_link.urdf'
    path.write_text(URDF)
    robot = RobotModel.load(str(path), gripper_joints=())
    assert robot.arm_joint_names == ['a', 'b']
    np.testing.assert_allclose(robot.max_velocity[:2], [1.5, 2.5])
    np.testing.assert_allclose(robot.lower[:2], [-1, -2])
    assert robot.jacobian(np.zeros(3)).shape == (6, 2)


def test_missing_file_is_clear():
    with pytest.raises(FileNotFoundError, match='nope.xml'):
        RobotModel.load('/nope.xml')
