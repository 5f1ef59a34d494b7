"""Load generators for the recording benchmark: one process per stream, drift-free schedules.

    python bench/publishers.py camera /cameras/front/image_raw 30 60 --width 640 --height 480
    python bench/publishers.py joints /joint_states 500 60
    python bench/publishers.py commands /joint_trajectory_controller/joint_trajectory 100 60
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import rclpy
from rclpy.node import Node
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import Image, JointState
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

NAMES = ['joint1', 'joint2', 'joint3', 'joint4', 'joint5', 'joint6', 'gripper']


def make_message(kind: str, node: Node, args):
    stamp = node.get_clock().now().to_msg()
    if kind == 'camera':
        msg = make_message.image
        msg.header.stamp = stamp
        return msg
    if kind == 'joints':
        q = np.sin(time.monotonic() + np.arange(7))
        return JointState(header=_header(stamp), name=NAMES, position=q.tolist(),
                          velocity=[], effort=[])
    return JointTrajectory(header=_header(stamp), joint_names=NAMES, points=[
        JointTrajectoryPoint(positions=[0.1] * 7)])


def _header(stamp):
    from std_msgs.msg import Header
    return Header(stamp=stamp)


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument('kind', choices=['camera', 'joints', 'commands'])
    parser.add_argument('topic')
    parser.add_argument('rate', type=float)
    parser.add_argument('duration', type=float)
    parser.add_argument('--width', type=int, default=640)
    parser.add_argument('--height', type=int, default=480)
    parser.add_argument('--start-delay', type=float, default=1.0)
    parser.add_argument('--reliable', action='store_true',
                        help='reliable QoS (default: sensor data, best effort)')
    args = parser.parse_args(argv)
    rclpy.init()
    node = Node(f'bench_pub_{args.kind}_{abs(hash(args.topic)) % 10000}')
    msgtype = {'camera': Image, 'joints': JointState, 'commands': JointTrajectory}[args.kind]
    qos = 10 if args.kind == 'commands' or args.reliable else qos_profile_sensor_data
    pub = node.create_publisher(msgtype, args.topic, qos)
    if args.kind == 'camera':
        img = Image(height=args.height, width=args.width, encoding='rgb8', step=args.width * 3)
        img.data = np.random.default_rng(0).integers(
            0, 255, args.height * args.width * 3, dtype=np.uint8).tobytes()
        make_message.image = img
    # Start the schedule once the recorder has matched this publisher (it subscribes on
    # discovery), plus a margin: messages sent before the match are not the recorder's loss.
    deadline = time.monotonic() + 30.0
    while pub.get_subscription_count() == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(args.start_delay)
    period = 1.0 / args.rate
    n = int(round(args.duration * args.rate))
    t0 = time.monotonic()
    for i in range(n):
        delay = t0 + i * period - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        pub.publish(make_message(args.kind, node, args))
    print(f'{args.topic}: published {n} in {time.monotonic() - t0:.2f} s', flush=True)
    time.sleep(1.0)
    node.destroy_node()
    rclpy.shutdown()


if __name__ == '__main__':
    main()
