"""The recorder node over DDS: episodes by service, Ctrl-C closes the current one cleanly."""
import json
import time

import numpy as np
import pytest
import yaml
from sensor_msgs.msg import Image, JointState
from std_srvs.srv import Trigger

from comsim_teleop.episodes.reader import Episode
from comsim_teleop.nodes.ros_io import IMAGE_QOS, SENSOR_QOS, image_msg

pytestmark = pytest.mark.ros

TOPICS = ['/joint_states sensor_msgs/msg/JointState 100', '/cam/image_raw sensor_msgs/msg/Image 20']


def call(node, name, spin_until):
    client = node.create_client(Trigger, name)
    assert client.wait_for_service(timeout_sec=15), name
    future = client.call_async(Trigger.Request())
    assert spin_until(node, future.done, 30), name
    return future.result()


def publish_for(node, seconds, js_pub, img_pub, spin_until):
    """Publish joint states at ~100 Hz and images at ~20 Hz with header stamps."""
    t0 = time.monotonic()
    i = 0
    while time.monotonic() - t0 < seconds:
        now = node.get_clock().now()
        msg = JointState(name=['a', 'b'], position=[0.1 * i, 0.2])  # empty velocity/effort
        msg.header.stamp = now.to_msg()
        js_pub.publish(msg)
        if i % 5 == 0:
            img = np.full((24, 32, 3), i % 255, np.uint8)
            img_pub.publish(image_msg(img, now.nanoseconds * 1e-9, 'cam'))
        i += 1
        spin_until(node, lambda: False, 0.01)
    return i


def test_episodes_by_service_and_sigint_closes_cleanly(ros_node, start_node, tmp_path,
                                                      spin_until):
    out = tmp_path / 'episodes'
    proc = start_node('comsim-recorder', 'recorder', {
        'use_sim_time': False, 'output_dir': str(out), 'topics': TOPICS, 'min_free_mb': 1,
        'task': 'unit', 'operator': 'pytest'})
    js_pub = ros_node.create_publisher(JointState, '/joint_states', SENSOR_QOS)
    img_pub = ros_node.create_publisher(Image, '/cam/image_raw', IMAGE_QOS)
    spin_until(ros_node, lambda: False, 1.5)  # discovery: the recorder subscribes on sight

    assert call(ros_node, '/recorder/start', spin_until).success
    sent = publish_for(ros_node, 2.0, js_pub, img_pub, spin_until)
    resp = call(ros_node, '/recorder/stop_success', spin_until)
    assert resp.success, resp.message
    summary = json.loads(resp.message)
    first = summary['path']
    # Reliable enough on loopback to count: the recorder got nearly all of them.
    assert summary['streams']['/joint_states']['count'] >= 0.9 * sent

    with Episode.open(first) as ep:
        assert ep.metadata['metadata']['task'] == 'unit'
        assert ep.metadata['metadata']['operator'] == 'pytest'
        assert ep.metadata['status'] == 'complete' and ep.metadata['success'] is True
        js = ep.joint_states('/joint_states')  # rclpy bytes, empty velocity: reads back
        assert js.position.shape[1] == 2 and np.isnan(js.velocity).all()
        imgs = list(ep.images('/cam/image_raw'))
        assert imgs and imgs[0][1].shape == (24, 32, 3)

    # Second episode interrupted by Ctrl-C: closed as 'interrupted', readable.
    assert call(ros_node, '/recorder/start', spin_until).success
    publish_for(ros_node, 1.0, js_pub, img_pub, spin_until)
    proc.send_signal(2)
    assert proc.wait(timeout=30) == 0, proc.log_path.read_text()
    second = sorted(p for p in out.iterdir() if p.is_dir())[-1]
    side = yaml.safe_load((second / 'episode.yaml').read_text())
    assert side['status'] == 'interrupted'
    with Episode.open(second) as ep:
        assert ep.streams['/joint_states'].count > 10
