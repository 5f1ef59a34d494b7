"""Shared test helpers: real CDR bytes (rosbags or rclpy), nodes over DDS, a small disk.

Puts the repository root on ``sys.path`` so tests import the builders they share with the
benchmarks from ``fixtures/``."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import rclpy
import yaml
from rclpy.node import Node

from comsim_core.ros.graph import find_executable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from fixtures.cdr import TS, header  # noqa: E402

# Each test session on its own DDS domain (unless the caller chose one), so two sessions on one
# machine never answer each other's services. Valid domains are 0-232 with default ports.
os.environ.setdefault('ROS_DOMAIN_ID', str(1 + os.getpid() % 200))
os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')

JOINTS = ['joint1', 'joint2', 'joint3', 'joint4', 'joint5', 'joint6', 'gripper']


def image_raw(t_ns: int, h: int = 6, w: int = 8, encoding: str = 'rgb8', value: int = 0,
              step_pad: int = 0) -> bytes:
    """A sensor_msgs/Image whose pixel (0,0) = (value, value+1, value+2) in RGB terms."""
    ch = {'rgb8': 3, 'bgr8': 3, 'rgba8': 4, 'bgra8': 4, 'mono8': 1, '16UC1': 2}[encoding]
    step = w * ch + step_pad
    data = np.zeros((h, step), dtype=np.uint8)
    px = {'rgb8': [value, value + 1, value + 2], 'bgr8': [value + 2, value + 1, value],
          'rgba8': [value, value + 1, value + 2, 255], 'bgra8': [value + 2, value + 1, value, 255],
          'mono8': [value], '16UC1': [value, 0]}[encoding]
    data[0, :ch] = px
    msg = TS.types['sensor_msgs/msg/Image'](header=header(t_ns, 'cam'), height=h, width=w,
                                            encoding=encoding, is_bigendian=0, step=step,
                                            data=data.reshape(-1))
    return bytes(TS.serialize_cdr(msg, 'sensor_msgs/msg/Image'))


def joint_state_raw(t_ns: int, position: list[float], rclpy_bytes: bool = True,
                    names: list[str] | None = None) -> bytes:
    """JointState with empty velocity/effort, serialized by rclpy (the interop bug) or rosbags."""
    names = names or JOINTS[: len(position)]
    if rclpy_bytes:
        from rclpy.serialization import serialize_message  # noqa: PLC0415
        from sensor_msgs.msg import JointState  # noqa: PLC0415

        m = JointState()
        m.header.stamp.sec, m.header.stamp.nanosec = t_ns // 10**9, t_ns % 10**9
        m.name = names
        m.position = [float(x) for x in position]
        return bytes(serialize_message(m))
    msg = TS.types['sensor_msgs/msg/JointState'](
        header=header(t_ns), name=names, position=np.asarray(position, dtype=np.float64),
        velocity=np.zeros(0), effort=np.zeros(0))
    return bytes(TS.serialize_cdr(msg, 'sensor_msgs/msg/JointState'))


def trajectory_raw(stamp_ns: int, points: list[tuple[float, list[float]]]) -> bytes:
    """JointTrajectory with (time_from_start_s, positions) points."""
    P = TS.types['trajectory_msgs/msg/JointTrajectoryPoint']
    D = TS.types['builtin_interfaces/msg/Duration']
    pts = [P(positions=np.asarray(p, dtype=np.float64), velocities=np.zeros(0),
             accelerations=np.zeros(0), effort=np.zeros(0),
             time_from_start=D(sec=int(s), nanosec=round((s % 1) * 1e9))) for s, p in points]
    msg = TS.types['trajectory_msgs/msg/JointTrajectory'](
        header=header(stamp_ns), joint_names=JOINTS[: len(points[0][1])], points=pts)
    return bytes(TS.serialize_cdr(msg, 'trajectory_msgs/msg/JointTrajectory'))


@pytest.fixture
def typestore() -> object:
    return TS


# -- real nodes over DDS in separate processes ---------------------------------------------
@pytest.fixture
def ros_node():
    """An rclpy node in this process (the test's side of the conversation)."""
    rclpy.init()
    node = Node(f'test_{os.getpid()}')
    yield node
    node.destroy_node()
    rclpy.shutdown()


def _spin_until(node: Node, predicate, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        rclpy.spin_once(node, timeout_sec=0.05)
        if predicate():
            return True
    return False


@pytest.fixture
def spin_until():
    """spin_until(node, predicate, timeout) -> whether predicate() became true in time."""
    return _spin_until


@pytest.fixture
def start_node(tmp_path):
    """Start a console-script node with a params dict; stopped with SIGINT at the end."""
    procs = []

    def start(executable: str, name: str, params: dict, extra=()):
        pfile = tmp_path / f'{name}.yaml'
        pfile.write_text(yaml.safe_dump({name: {'ros__parameters': params}}))
        log = open(tmp_path / f'{name}.log', 'w')
        proc = subprocess.Popen([find_executable(executable), '--ros-args', '-r',
                                 f'__node:={name}', '--params-file', str(pfile), *extra],
                                stdout=log, stderr=subprocess.STDOUT)
        proc.log_path = tmp_path / f'{name}.log'
        procs.append(proc)
        return proc

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(2)
    for proc in procs:
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture
def small_tmpfs(tmp_path):
    """A 3 MB tmpfs: a disk that fills up (skips where mounting is not allowed)."""
    mnt = tmp_path / 'mnt'
    mnt.mkdir()
    res = subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=3m', 'tmpfs', str(mnt)],
                         capture_output=True, text=True, check=False)
    if res.returncode != 0:
        pytest.skip(f'cannot mount a tmpfs here: {res.stderr.strip() or res.returncode}')
    try:
        yield mnt
    finally:
        subprocess.run(['umount', str(mnt)], check=False)
