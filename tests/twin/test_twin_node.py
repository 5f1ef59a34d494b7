"""The twin node over DDS (separate process): bag replay and live mirror of /joint_states."""
from __future__ import annotations

import numpy as np
import pytest
import yaml
from sensor_msgs.msg import CameraInfo, Image, JointState

from comsim_core.episodes import Episode
from comsim_core.metrics import psnr
from comsim_core.ros.messages import IMAGE_QOS, SENSOR_QOS
from comsim_twin.backends import make_backend
from fixtures.bench_lab_episodes import record_episode

pytestmark = pytest.mark.ros


@pytest.fixture(scope='module')
def recorded(tmp_path_factory):
    root = tmp_path_factory.mktemp('node')
    path, scene, _ = record_episode(root / 'real', 'move_card', seed=2, camera_hz=10.0,
                                    max_s=3.0)
    return path, scene, scene.save(root / 'twin_scene.yaml')


@pytest.fixture
def start_twin(start_node):
    """The installed `comsim-twin` console script, via the shared `start_node` fixture."""
    return lambda params: start_node('comsim-twin', 'twin', params)


def _listen(node, cam: str):
    images, infos = [], []
    node.create_subscription(Image, f'/twin/cameras/{cam}/image_raw', images.append, IMAGE_QOS)
    node.create_subscription(CameraInfo, f'/twin/cameras/{cam}/camera_info', infos.append,
                             IMAGE_QOS)
    return images, infos


def _stamp(msg) -> int:
    return msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec


def test_bag_replay_publishes_twin_renders_with_recorded_stamps(recorded, start_twin, ros_node,
                                                               spin_until):
    bag, scene, scene_file = recorded
    images, infos = _listen(ros_node, 'front')
    proc = start_twin({'use_sim_time': False, 'mode': 'replay', 'bag': str(bag),
                       'scene': str(scene_file), 'rate_hz': 20.0, 'loop': True})
    # loop: discovery may take longer than one pass of the short bag on a loaded machine
    assert spin_until(ros_node, lambda: len({_stamp(m) for m in images}) >= 8 and infos, 60.0), \
        proc.log_path.read_text()
    with Episode.open(bag) as ep:
        recorded_stamps = [t for t, _ in ep.images('/cameras/front/image_raw')]
    stamps = [_stamp(m) for m in images]
    assert set(stamps) <= set(recorded_stamps)
    # in order within each pass of the loop
    assert sum(b <= a for a, b in zip(stamps, stamps[1:])) <= len(stamps) // 10 + 1
    cam = scene.cameras['front']
    img = images[0]
    assert (img.width, img.height, img.encoding) == (cam.width, cam.height, 'rgb8')
    np.testing.assert_allclose(np.array(infos[0].k).reshape(3, 3), cam.K)
    np.testing.assert_allclose(infos[0].d, cam.D)
    frames = [np.frombuffer(bytes(m.data), np.uint8) for m in images]
    assert any(not np.array_equal(frames[0], f) for f in frames[1:])   # the arm moves


def test_mirror_follows_live_joint_states(recorded, start_twin, ros_node, spin_until):
    _, scene, scene_file = recorded
    images, _ = _listen(ros_node, 'front')
    proc = start_twin({'use_sim_time': False, 'mode': 'mirror', 'scene': str(scene_file),
                       'rate_hz': 10.0})
    pub = ros_node.create_publisher(JointState, '/joint_states', SENSOR_QOS)
    twin = make_backend('mujoco')
    twin.build(scene)
    names = twin.joint_names
    pose = np.array([0.4, 0.3, -0.5, 0.2, 0.6, -0.3, 0.02])

    def publish(q, sec):
        msg = JointState(name=list(reversed(names)), position=[float(x) for x in q[::-1]])
        msg.header.stamp.sec = sec
        pub.publish(msg)

    def seen(sec):
        return any(m.header.stamp.sec == sec for m in images)

    assert spin_until(ros_node, lambda: publish(twin.robot.home, 11) or seen(11), 40.0), \
        proc.log_path.read_text()
    assert spin_until(ros_node, lambda: publish(pose, 22) or seen(22), 20.0), \
        proc.log_path.read_text()
    got = {sec: [m for m in images if m.header.stamp.sec == sec][-1] for sec in (11, 22)}
    as_rgb = {s: np.frombuffer(bytes(m.data), np.uint8).reshape(m.height, m.width, 3)
              for s, m in got.items()}
    twin.set_joint_positions(pose)
    expected = twin.render('front')
    twin.close()
    # The node's render of the posed arm matches a local render of that pose, not the home one.
    assert psnr(as_rgb[22], expected) > 30.0
    assert psnr(as_rgb[22], expected) > psnr(as_rgb[11], expected) + 5.0


def test_replay_without_bag_is_refused(recorded, start_twin):
    _, _, scene_file = recorded
    proc = start_twin({'mode': 'replay', 'scene': str(scene_file)})
    assert proc.wait(timeout=60) != 0
    assert 'mode replay needs the parameter bag' in proc.log_path.read_text()


def test_config_and_launch_file_match_the_node():
    """config/twin.yaml may only set parameters the node declares, with the declared types."""
    from pathlib import Path

    from comsim_core.ros.graph import load_launch_module
    from comsim_twin.nodes.twin_node import DEFAULTS

    root = Path(__file__).resolve().parents[2]
    params = yaml.safe_load((root / 'config' / 'twin.yaml').read_text())['twin']['ros__parameters']
    assert set(params) - {'use_sim_time'} <= set(DEFAULTS)
    for key, value in params.items():
        if key in DEFAULTS:
            assert type(value) is type(DEFAULTS[key]), key
    spec = load_launch_module(root / 'launch' / 'twin.launch.py').NODES[0]
    assert (spec['name'], spec['params'], spec['executable']) == ('twin', ['twin.yaml'],
                                                                  'comsim-twin')
