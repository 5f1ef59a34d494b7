"""Helpers (no tests): the policy node in its own process, and the robot side of the test.

`start_policy` runs `python -m comsim_policy.nodes.policy_node` with a params file; `FakeRobot`
publishes joint states and two cameras from the test's rclpy node (each stream can be stopped
or, for joint states, turned to NaN) and records what the node sends: arm commands, status and
/diagnostics, each with its arrival time.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import yaml
from diagnostic_msgs.msg import DiagnosticArray
from sensor_msgs.msg import CompressedImage, Image, JointState
from std_msgs.msg import String
from trajectory_msgs.msg import JointTrajectory

from comsim_core.robot.model import RobotModel
from comsim_core.ros.messages import IMAGE_QOS, LATCHED_QOS, SENSOR_QOS, image_msg

HERE = Path(__file__).resolve().parent
ARM = '/joint_trajectory_controller/joint_trajectory'
CAMS = ['/test_cams/front/image_raw', '/test_cams/side/image_raw']
SIZE = (24, 32)


def start_policy(tmp_path, checkpoint, **params) -> subprocess.Popen:
    """`python -m comsim_policy.nodes.policy_node` (until its console script is registered)."""
    values = {'use_sim_time': False, 'checkpoint': str(checkpoint), 'stale_after_s': 0.5,
              'startup_timeout_s': 30.0, **params}
    pfile = tmp_path / 'policy.yaml'
    pfile.write_text(yaml.safe_dump({'policy': {'ros__parameters': values}}))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE),
                                                       os.environ.get('PYTHONPATH', '')]))
    log = open(tmp_path / 'policy.log', 'w')
    proc = subprocess.Popen([sys.executable, '-m', 'comsim_policy.nodes.policy_node',
                             '--ros-args', '-r', '__node:=policy', '--params-file', str(pfile)],
                            stdout=log, stderr=subprocess.STDOUT, env=env)
    proc.log_path = tmp_path / 'policy.log'
    return proc


def stop_all(procs) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(2)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()


def assert_alive(proc) -> None:
    """The node still runs and has logged no Python traceback."""
    log = proc.log_path.read_text()
    assert proc.poll() is None, f'policy node exited ({proc.returncode}):\n{log}'
    assert 'Traceback' not in log, log


def jpeg_msg(rgb: np.ndarray, node) -> CompressedImage:
    """A CompressedImage as image_transport's compressed plugin sends it (JPEG of BGR)."""
    import cv2  # noqa: PLC0415

    ok, buf = cv2.imencode('.jpg', np.ascontiguousarray(rgb[..., ::-1]),
                           [cv2.IMWRITE_JPEG_QUALITY, 95])
    assert ok
    msg = CompressedImage(format='rgb8; jpeg compressed bgr8', data=buf.tobytes())
    msg.header.stamp = node.get_clock().now().to_msg()
    msg.header.frame_id = 'cam'
    return msg


def diag_values(msg: DiagnosticArray) -> dict[str, str]:
    return {kv.key: kv.value for kv in msg.status[0].values}


def is_hold(msg: JointTrajectory) -> bool:
    """A hold is stamped 0 ("now"); a chunk carries its observation time (and may have only
    one point left when the others were already due)."""
    return msg.header.stamp.sec == 0 and msg.header.stamp.nanosec == 0


def trajectories(msgs):
    return [m for m in msgs if not is_hold(m)]


def holds(msgs):
    return [m for m in msgs if is_hold(m)]


def positions(msg: JointTrajectory) -> np.ndarray:
    return np.array([p.positions for p in msg.points])


class FakeRobot:
    """The test's side: joint states at 100 Hz and two cameras at 20 Hz, stamped now, from a
    timer of the test's node (they flow whenever the test spins: in `run` and `call`).

    `compressed`: the cameras send JPEG CompressedImages on `<camera>/compressed` (as
    image_transport does); `camera_qos`: the cameras' publisher QoS (a best-effort driver);
    `frame`: one fixed RGB frame instead of a grey level that changes with every frame."""

    def __init__(self, node, q, arm_topic=ARM, msg_type=JointTrajectory, compressed=False,
                 camera_qos=IMAGE_QOS, frame=None):
        self.node, self.q = node, np.asarray(q, float)
        self.names = RobotModel.load().joint_names
        self.js = node.create_publisher(JointState, '/joint_states', SENSOR_QOS)
        self.compressed, self.frame = compressed, frame
        self.cams = {c: node.create_publisher(CompressedImage, f'{c}/compressed', camera_qos)
                     if compressed else node.create_publisher(Image, c, camera_qos)
                     for c in CAMS}
        self.got: list = []
        self.recv_times: list[float] = []
        node.create_subscription(msg_type, arm_topic, self._on_cmd, 50)
        self.status: dict = {}
        node.create_subscription(String, '/policy/status',
                                 lambda m: self.status.update(json.loads(m.data)), LATCHED_QOS)
        self.diag: list = []
        self.diag_times: list[float] = []
        node.create_subscription(DiagnosticArray, '/diagnostics', self._on_diag, 10)
        self.cameras_on = True
        self.joints_on = True
        self.nan_joints = False          # joint 2's position NaN in every joint state sent
        self.camera_sent = self.joints_sent = None   # when each stream last went out
        self.i = 0
        node.create_timer(0.01, self.publish)

    def _on_cmd(self, msg):
        self.got.append(msg)
        self.recv_times.append(self.now())

    def _on_diag(self, msg):
        self.diag.append(msg)
        self.diag_times.append(self.now())

    def now(self):
        return self.node.get_clock().now().nanoseconds * 1e-9

    def publish(self):
        t = self.now()
        if self.joints_on:
            q = self.q.copy()
            if self.nan_joints:
                q[1] = np.nan
            msg = JointState(name=self.names, position=q.tolist())
            msg.header.stamp = self.node.get_clock().now().to_msg()
            self.js.publish(msg)
            self.joints_sent = t
        if self.cameras_on and self.i % 5 == 0:
            rgb = self.frame if self.frame is not None else \
                np.full((*SIZE, 3), self.i % 250, np.uint8)
            for pub in self.cams.values():
                pub.publish(jpeg_msg(rgb, self.node) if self.compressed
                            else image_msg(rgb, t, 'cam'))
            self.camera_sent = t
        self.i += 1

    def run(self, spin_until, seconds, until=None):
        return spin_until(self.node, until or (lambda: False), seconds)

    def call(self, spin_until, srv, name, req):
        client = self.node.create_client(srv, name)
        # Keep spinning (publishing) while waiting: a blocking wait would starve the node.
        assert self.run(spin_until, 15, client.service_is_ready), name
        future = client.call_async(req)
        assert self.run(spin_until, 10, future.done), f'{name}: no reply'
        return future.result()

    def diag_since(self, t: float):
        """/diagnostics received after time `t`."""
        return [d for d, tr in zip(self.diag, self.diag_times) if tr > t]
