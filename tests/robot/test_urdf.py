"""The committed URDF is the generator's output, and its kinematics equal the MJCF's (MuJoCo)."""
import subprocess
import sys
import xml.etree.ElementTree as ET

import mujoco
import numpy as np
import pytest

from comsim_core.errors import EXIT_USAGE
from comsim_core.robot import RobotModel
from comsim_core.robot.urdf import DEFAULT_URDF_PATH, main, mjcf_to_urdf, robot_description


def _rot(rpy):
    r, p, y = rpy
    rx = np.array([[1, 0, 0], [0, np.cos(r), -np.sin(r)], [0, np.sin(r), np.cos(r)]])
    ry = np.array([[np.cos(p), 0, np.sin(p)], [0, 1, 0], [-np.sin(p), 0, np.cos(p)]])
    rz = np.array([[np.cos(y), -np.sin(y), 0], [np.sin(y), np.cos(y), 0], [0, 0, 1]])
    return rz @ ry @ rx


def _axis_angle(axis, angle):
    k = np.asarray(axis, float) / np.linalg.norm(axis)
    skew = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + np.sin(angle) * skew + (1 - np.cos(angle)) * skew @ skew


def _floats(text, default='0 0 0'):
    return np.array([float(v) for v in (text or default).split()])


def urdf_fk(text, q):
    """World pose (4×4) of every link for joint values q (name -> value; mimics followed)."""
    root = ET.fromstring(text)
    joints = {j.find('child').get('link'): j for j in root.findall('joint')}
    links = [lk.get('name') for lk in root.findall('link')]
    poses = {}

    def value(joint):
        mimic = joint.find('mimic')
        if mimic is None:
            return q.get(joint.get('name'), 0.0)
        return float(mimic.get('multiplier', 1)) * q[mimic.get('joint')] + \
            float(mimic.get('offset', 0))

    def pose(link):
        if link in poses:
            return poses[link]
        joint = joints.get(link)
        out = np.eye(4)
        if joint is not None:
            origin = joint.find('origin')
            local = np.eye(4)
            if origin is not None:
                local[:3, :3] = _rot(_floats(origin.get('rpy')))
                local[:3, 3] = _floats(origin.get('xyz'))
            move = np.eye(4)
            kind = joint.get('type')
            if kind in ('revolute', 'continuous', 'prismatic'):
                axis = _floats(joint.find('axis').get('xyz'), '1 0 0')
                if kind == 'prismatic':
                    move[:3, 3] = axis / np.linalg.norm(axis) * value(joint)
                else:
                    move[:3, :3] = _axis_angle(axis, value(joint))
            out = pose(joint.find('parent').get('link')) @ local @ move
        poses[link] = out
        return out

    return {link: pose(link) for link in links}


@pytest.fixture(scope='module')
def arm():
    return RobotModel.load()


def test_committed_urdf_is_the_generators_output():
    with open(DEFAULT_URDF_PATH, encoding='utf8') as fh:
        committed = fh.read()
    assert committed == mjcf_to_urdf(), \
        'regenerate: comsim-urdf --out src/comsim_core/comsim_core/robot/assets/comsim_arm.urdf'
    assert robot_description() == committed


def test_urdf_link_frames_equal_mujoco(arm):
    text = robot_description()
    model, data = arm.model, mujoco.MjData(arm.model)
    rng = np.random.default_rng(7)
    tcp = model.site('tcp').id
    for _ in range(5):
        q = rng.uniform(arm.lower, arm.upper)
        data.qpos[:] = 0
        for name, v in zip(arm.arm_joint_names, q):
            data.qpos[model.jnt_qposadr[model.joint(name).id]] = v
        for name in arm.gripper_joint_names:  # the equality couples the fingers 1:1
            data.qpos[model.jnt_qposadr[model.joint(name).id]] = q[-1]
        mujoco.mj_kinematics(model, data)
        poses = urdf_fk(text, dict(zip(arm.joint_names, q)))
        for b in range(1, model.nbody):
            got = poses[model.body(b).name]
            np.testing.assert_allclose(got[:3, 3], data.xpos[b], atol=1e-6)
            np.testing.assert_allclose(got[:3, :3], data.xmat[b].reshape(3, 3), atol=1e-6)
        np.testing.assert_allclose(poses['tcp'][:3, 3], data.site_xpos[tcp], atol=1e-6)
        np.testing.assert_allclose(poses['tcp'][:3, :3], data.site_xmat[tcp].reshape(3, 3),
                                   atol=1e-6)
        pos, rot = arm.fk(q)
        np.testing.assert_allclose(poses['tcp'][:3, 3], pos, atol=1e-6)
        np.testing.assert_allclose(poses['tcp'][:3, :3], rot, atol=1e-6)


def test_urdf_joints_follow_the_joint_state_convention(arm):
    root = ET.fromstring(robot_description())
    movable = {j.get('name'): j for j in root.findall('joint')
               if j.get('type') != 'fixed' and j.find('mimic') is None}
    assert sorted(movable) == sorted(arm.joint_names)
    for name, lo, hi, vel in zip(arm.joint_names, arm.lower, arm.upper, arm.max_velocity):
        limit = movable[name].find('limit')
        assert float(limit.get('lower')) == pytest.approx(lo)
        assert float(limit.get('upper')) == pytest.approx(hi)
        assert float(limit.get('velocity')) == pytest.approx(vel)


def test_cli_check_and_bad_input(tmp_path, capsys):
    assert main(['--check', DEFAULT_URDF_PATH]) == 0
    stale = tmp_path / 'stale.urdf'
    stale.write_text('<robot name="x"/>\n')
    assert main(['--check', str(stale)]) == 1
    assert main([str(tmp_path / 'missing.xml')]) == EXIT_USAGE
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and err[-1].startswith('comsim-urdf: error:') and 'missing.xml' in err[-1]
    offset = tmp_path / 'offset.xml'  # a hinge off its body origin has no URDF equivalent here
    offset.write_text('<mujoco><worldbody><body name="b"><joint name="j" pos="0.1 0 0"/>'
                      '<geom size="0.1"/></body></worldbody></mujoco>')
    assert main([str(offset)]) == EXIT_USAGE
    assert 'body origin' in capsys.readouterr().err


def test_module_runs_as_a_script(tmp_path):
    out = tmp_path / 'arm.urdf'
    proc = subprocess.run([sys.executable, '-m', 'comsim_core.robot.urdf', '--out', str(out)],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert out.read_text(encoding='utf8') == robot_description()
