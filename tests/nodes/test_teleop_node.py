"""The teleop node over DDS: a leader arm drives it; limits, velocity clamps and enable hold."""
import numpy as np
import pytest
from sensor_msgs.msg import JointState
from std_srvs.srv import SetBool
from trajectory_msgs.msg import JointTrajectory

from comsim_teleop.robot.model import RobotModel

pytestmark = pytest.mark.ros


def test_leader_arm_teleop_is_clamped_and_needs_enable(ros_node, start_node, spin_until):
    robot = RobotModel.load()
    proc = start_node('comsim-teleop', 'teleop', {
        'use_sim_time': False, 'source': 'leader', 'rate_hz': 50.0, 'start_enabled': False})
    got = []
    ros_node.create_subscription(JointTrajectory, '/joint_trajectory_controller/joint_trajectory',
                                 lambda m: got.append(m), 10)
    js_pub = ros_node.create_publisher(JointState, '/joint_states', 10)
    leader_pub = ros_node.create_publisher(JointState, '/leader/joint_states', 10)
    far = robot.upper + 1.0  # beyond every limit
    names = robot.joint_names

    def publish():
        js_pub.publish(JointState(name=names, position=robot.home.tolist()))
        leader_pub.publish(JointState(name=names, position=far.tolist()))

    # Not enabled: nothing may be sent to the arm.
    spin_until(ros_node, lambda: publish() or False, 2.0)
    assert proc.poll() is None, proc.log_path.read_text()
    assert got == []

    client = ros_node.create_client(SetBool, '/teleop/enable')
    assert client.wait_for_service(timeout_sec=10)
    future = client.call_async(SetBool.Request(data=True))
    spin_until(ros_node, future.done, 10)
    assert future.result().success
    assert spin_until(ros_node, lambda: publish() or len(got) >= 40, 10.0), \
        proc.log_path.read_text()

    targets = np.array([m.points[0].positions for m in got])
    assert list(got[-1].joint_names) == names
    assert np.all(targets <= robot.upper + 1e-9) and np.all(targets >= robot.lower - 1e-9)
    # Velocity clamp: consecutive targets move at most max_velocity / rate.
    steps = np.abs(np.diff(targets, axis=0))
    assert np.all(steps <= robot.max_velocity / 50.0 + 1e-9)
    # It converges to the limit (the clamped leader target), not beyond.
    spin_until(ros_node, lambda: publish() or False, 4.0)
    np.testing.assert_allclose(np.array(got[-1].points[0].positions), robot.upper, atol=1e-6)


def test_unknown_parameter_is_refused(start_node):
    proc = start_node('comsim-teleop', 'teleop', {'sourse': 'leader'})
    assert proc.wait(timeout=30) != 0
    assert "unknown parameter(s) ['sourse']" in proc.log_path.read_text()
