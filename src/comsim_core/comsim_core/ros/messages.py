"""Conversions between ROS 2 messages and numpy, and the QoS profiles the stack agrees on.

Only the thin node modules import this file; the logic they wrap never sees a ROS type.
"""
from __future__ import annotations

import numpy as np
from builtin_interfaces.msg import Duration, Time
from rclpy.qos import (
    DurabilityPolicy,
    HistoryPolicy,
    QoSProfile,
    ReliabilityPolicy,
    qos_profile_sensor_data,
)
from sensor_msgs.msg import CameraInfo, Image, JointState
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from comsim_core.control.trajectory import TrajectoryPoint

SENSOR_QOS = qos_profile_sensor_data
# Camera images: reliable, shallow. Best effort loses 640x480 frames to UDP fragment loss even
# on loopback (measured: 0-2 of 120 arrive), as many camera drivers' defaults acknowledge.
IMAGE_QOS = QoSProfile(depth=5, reliability=ReliabilityPolicy.RELIABLE,
                       history=HistoryPolicy.KEEP_LAST)
# Commands must not be lost: reliable, shallow queue (newest wins).
COMMAND_QOS = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE,
                         history=HistoryPolicy.KEEP_LAST)
# Latched state (task description, calibration): late joiners get the last message.
LATCHED_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL,
                         history=HistoryPolicy.KEEP_LAST)


def to_time_msg(t: float) -> Time:
    ns = int(round(t * 1e9))
    return Time(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000)


def time_to_sec(stamp) -> float:
    return stamp.sec + stamp.nanosec * 1e-9


def to_duration_msg(t: float) -> Duration:
    ns = int(round(t * 1e9))
    return Duration(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000)


def image_msg(rgb: np.ndarray, stamp: float, frame_id: str) -> Image:
    """An rgb8 Image from an HxWx3 uint8 array."""
    rgb = np.ascontiguousarray(rgb, dtype=np.uint8)
    h, w = rgb.shape[:2]
    msg = Image()
    msg.header.stamp = to_time_msg(stamp)
    msg.header.frame_id = frame_id
    msg.height, msg.width = h, w
    msg.encoding = 'rgb8'
    msg.is_bigendian = 0
    msg.step = w * 3
    msg.data = rgb.tobytes()
    return msg


def camera_info_msg(width: int, height: int, K, D, stamp: float, frame_id: str) -> CameraInfo:
    """CameraInfo in the plumb_bob model for an unrectified camera."""
    K = np.asarray(K, dtype=float).reshape(3, 3)
    msg = CameraInfo()
    msg.header.stamp = to_time_msg(stamp)
    msg.header.frame_id = frame_id
    msg.width, msg.height = int(width), int(height)
    msg.distortion_model = 'plumb_bob'
    msg.d = [float(x) for x in np.asarray(D, dtype=float).ravel()]
    msg.k = [float(x) for x in K.ravel()]
    msg.r = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    P = np.zeros((3, 4))
    P[:, :3] = K
    msg.p = [float(x) for x in P.ravel()]
    return msg


def joint_state_msg(names, position, velocity, effort, stamp: float) -> JointState:
    msg = JointState()
    msg.header.stamp = to_time_msg(stamp)
    msg.name = list(names)
    msg.position = [float(x) for x in position]
    msg.velocity = [float(x) for x in velocity]
    msg.effort = [float(x) for x in effort]
    return msg


def trajectory_msg(names, positions, stamp: float, time_from_start: float) -> JointTrajectory:
    """A one-point trajectory: what a teleop or policy step sends to a JTC."""
    msg = JointTrajectory()
    msg.header.stamp = to_time_msg(stamp)
    msg.joint_names = list(names)
    msg.points = [JointTrajectoryPoint(positions=[float(x) for x in positions],
                                       time_from_start=to_duration_msg(time_from_start))]
    return msg


def chunk_trajectory_msg(names, positions: np.ndarray, stamp: float, dt: float,
                         first_offset: float) -> JointTrajectory:
    """A multi-point trajectory: point i due at stamp + first_offset + i*dt."""
    msg = JointTrajectory()
    msg.header.stamp = to_time_msg(stamp)
    msg.joint_names = list(names)
    msg.points = [JointTrajectoryPoint(positions=[float(x) for x in q],
                                       time_from_start=to_duration_msg(first_offset + i * dt))
                  for i, q in enumerate(positions)]
    return msg


def trajectory_points(msg: JointTrajectory) -> list[TrajectoryPoint]:
    return [TrajectoryPoint(time_to_sec(p.time_from_start) if hasattr(p.time_from_start, 'sec')
                            else float(p.time_from_start),
                            np.asarray(p.positions, dtype=float),
                            np.asarray(p.velocities, dtype=float) if len(p.velocities) else None)
            for p in msg.points]
