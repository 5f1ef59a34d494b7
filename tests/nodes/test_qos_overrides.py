"""QoS overrides that work (``qos_overrides.<topic>.subscription.<policy>``), refused in one line
when misspelt; the recorder over DDS with a best-effort PNG camera and an override that makes a
best-effort camera unreachable (the DDS rule), CompressedImage recorded and decoded back."""
from __future__ import annotations

import json
import time
from pathlib import Path

import cv2
import numpy as np
import pytest
import yaml
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import CompressedImage, Image, JointState
from std_msgs.msg import String
from trigger_service import call

from comsim_core.episodes.reader import Episode
from comsim_core.ros.messages import IMAGE_QOS, LATCHED_QOS, SENSOR_QOS, image_msg
from comsim_core.ros.params import ParameterConfigError
from comsim_core.ros.qos import check_qos_overrides, subscribe
from comsim_policy.data.episode_arrays import camera_stream

pytestmark = pytest.mark.ros
KEY = 'qos_overrides./cam/image_raw.subscription.'
BEST_EFFORT = QoSProfile(depth=5, reliability=ReliabilityPolicy.BEST_EFFORT,
                         history=HistoryPolicy.KEEP_LAST)


def _node(ros_node, **overrides) -> Node:
    return Node('qos_test', parameter_overrides=[Parameter(k, value=v)
                                                 for k, v in overrides.items()])


def test_an_override_sets_the_subscription_and_leaves_the_shared_profile(ros_node):
    node = _node(ros_node, **{KEY + 'reliability': 'best_effort', KEY + 'depth': 2})
    try:
        check_qos_overrides(node, ['/cam/image_raw'])
        sub = subscribe(node, Image, '/cam/image_raw', lambda m: None, IMAGE_QOS)
        assert sub.qos_profile.reliability == ReliabilityPolicy.BEST_EFFORT
        assert sub.qos_profile.depth == 2
        assert IMAGE_QOS.reliability == ReliabilityPolicy.RELIABLE and IMAGE_QOS.depth == 5
        # declared, read-only, described: what `ros2 param describe` shows
        assert node.get_parameter(KEY + 'reliability').value == 'best_effort'
        assert node.get_parameter(KEY + 'history').value == 'keep_last'
        other = subscribe(node, Image, '/cam2/image_raw', lambda m: None, IMAGE_QOS)
        assert other.qos_profile.reliability == ReliabilityPolicy.RELIABLE
    finally:
        node.destroy_node()


@pytest.mark.parametrize('key,value,why', [
    ('qos_overrides./cam/imag_raw.subscription.reliability', 'best_effort',
     "names no subscription of this node; its subscriptions: ['/cam/image_raw']"),
    (KEY + 'reliabilty', 'best_effort', "is no overridable policy; known: ['depth', 'history',"),
    (KEY + 'reliability', 'besteffort', "must be one of ['system_default', 'reliable', "
                                        "'best_effort'"),
    (KEY + 'depth', -1, 'must be an integer >= 0, got -1'),
    ('qos_overrides./cam/image_raw.publisher.reliability', 'best_effort', 'names no subscr'),
])
def test_a_bad_override_is_one_line(ros_node, key, value, why):
    node = _node(ros_node, **{key: value})
    try:
        with pytest.raises(ParameterConfigError) as info:
            check_qos_overrides(node, ['/cam/image_raw'])
        assert str(info.value).startswith(f"node 'qos_test': parameter '{key}' {why}")
        assert '\n' not in str(info.value)
    finally:
        node.destroy_node()


def test_recorder_records_a_best_effort_compressed_camera_and_obeys_overrides(
        ros_node, start_node, tmp_path, spin_until):
    """Two best-effort cameras: PNG CompressedImages on /cam/image_raw/compressed (override
    best_effort: recorded, decoded back to the frames sent) and raw Images on /cam2/image_raw
    with an override saying reliable (never matched: nothing recorded, and the log says why)."""
    out = tmp_path / 'episodes'
    topics = ['/joint_states sensor_msgs/msg/JointState 100',
              '/cam/image_raw/compressed sensor_msgs/msg/CompressedImage 20',
              '/cam2/image_raw sensor_msgs/msg/Image 20']
    proc = start_node('comsim-recorder', 'recorder', {
        'use_sim_time': False, 'output_dir': str(out), 'topics': topics, 'min_free_mb': 1,
        'qos_overrides': {
            '/cam/image_raw/compressed': {'subscription': {'reliability': 'best_effort'}},
            '/cam2/image_raw': {'subscription': {'reliability': 'reliable'}}}})
    status: dict = {}
    ros_node.create_subscription(String, '/recorder/status',
                                 lambda m: status.update(json.loads(m.data)), LATCHED_QOS)
    js_pub = ros_node.create_publisher(JointState, '/joint_states', SENSOR_QOS)
    png_pub = ros_node.create_publisher(CompressedImage, '/cam/image_raw/compressed',
                                         BEST_EFFORT)
    raw_pub = ros_node.create_publisher(Image, '/cam2/image_raw', BEST_EFFORT)
    assert spin_until(ros_node, lambda: len(status.get('subscribed', {})) == 3, 30), \
        proc.log_path.read_text()
    assert status['subscribed'] == {'/joint_states': 'best_effort',
                                    '/cam/image_raw/compressed': 'best_effort',
                                    '/cam2/image_raw': 'reliable'}
    assert call(ros_node, '/recorder/start', spin_until).success
    frames = {}
    t0, i = time.monotonic(), 0
    while time.monotonic() - t0 < 2.0:
        now = ros_node.get_clock().now()
        js = JointState(name=['a'], position=[0.01 * i])
        js.header.stamp = now.to_msg()
        js_pub.publish(js)
        if i % 5 == 0:
            rgb = np.zeros((24, 32, 3), np.uint8)
            rgb[..., 0], rgb[..., 1] = i % 250, np.arange(32) * 8
            ok, buf = cv2.imencode('.png', rgb[..., ::-1])
            msg = CompressedImage(format='png', data=buf.tobytes())
            msg.header.stamp = now.to_msg()
            png_pub.publish(msg)
            frames[now.nanoseconds] = rgb
            raw_pub.publish(image_msg(rgb, now.nanoseconds * 1e-9, 'cam2'))
        i += 1
        spin_until(ros_node, lambda: False, 0.01)
    resp = call(ros_node, '/recorder/stop_success', spin_until)
    assert resp.success, resp.message
    path = json.loads(resp.message)['path']
    log = proc.log_path.read_text()
    assert "/cam2/image_raw: the reliable subscription (qos_overrides) never receives from " \
           "best-effort publishers" in log, log
    with Episode.open(path) as ep:
        images = list(ep.images('/cam/image_raw/compressed'))
        assert len(images) >= 0.8 * len(frames), (len(images), len(frames))
        for t, img in images:                    # PNG: exact
            np.testing.assert_array_equal(img, frames[t])
        assert ep.streams.get('/cam2/image_raw') is None or \
            ep.streams['/cam2/image_raw'].count == 0
        # training finds a camera's compressed stream under the camera's own name
        assert camera_stream(ep.topics, '/cam/image_raw') == '/cam/image_raw/compressed'
    info = yaml.safe_load((Path(path) / 'metadata.yaml').read_text())
    offered = {t['topic_metadata']['name']: t['topic_metadata']['offered_qos_profiles']
               for t in info['rosbag2_bagfile_information']['topics_with_message_count']}
    assert [q['reliability'] for q in offered['/cam/image_raw/compressed']] == ['best_effort']
