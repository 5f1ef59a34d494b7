"""Configs and clips: YAML round-trip and errors, paired episodes, missing streams, latents."""

import numpy as np
import pytest
from ns_helpers import one_thread, tiny_config  # noqa: F401
from rosbags.typesys import Stores, get_typestore

from comsim_core.episodes.encode import mono8_image_cdr
from comsim_core.episodes.paired import sim_objects_topic
from comsim_core.episodes.topics import TopicSpec
from comsim_core.episodes.writer import EpisodeBagWriter
from comsim_neural_sim.config import NeuralSimConfig
from comsim_neural_sim.data import ClipDataset, load_paired_episode, synthetic_pair
from comsim_neural_sim.data.clips import PairedClip, load_paired_dir
from comsim_neural_sim.errors import (
    AutoencoderNotFoundError,
    ConfigError,
    InputShapeError,
    MissingStreamError,
)
from comsim_neural_sim.models.autoencoder import LatentCodec

TS = get_typestore(Stores.ROS2_KILTED)
CMD = '/joint_trajectory_controller/joint_trajectory'


@pytest.mark.parametrize('name', ['neural_sim.yaml', 'neural_sim_gpu.yaml'])
def test_shipped_configs_load_and_round_trip(name, tmp_path):
    cfg = NeuralSimConfig.from_yaml(f'config/{name}')
    cfg.save(tmp_path)
    assert NeuralSimConfig.from_yaml(tmp_path) == cfg


def test_bad_configs_are_named():
    with pytest.raises(ConfigError, match='unknown key'):
        NeuralSimConfig.from_dict({'frams': 8})
    with pytest.raises(ConfigError, match='patch_size'):
        NeuralSimConfig(height=30, patch_size=4)
    with pytest.raises(ConfigError, match='context_frames'):
        NeuralSimConfig(frames=4, context_frames=4)


def test_dataset_windows_and_action_dim_check():
    cfg = tiny_config(clip_stride=2)
    ds = ClipDataset([synthetic_pair(9, 20, 20, seed=0)], cfg)
    assert len(ds) == 3   # starts 0, 2, 4
    item = ds[1]
    assert item['real'].shape == (4, 3, 16, 16) and item['actions'].shape == (4, 7)
    with pytest.raises(InputShapeError, match='action_dim is 7'):
        ClipDataset([synthetic_pair(9, 20, 20, action_dim=5)], cfg)


def _image(t_ns, frame):
    T = TS.types['builtin_interfaces/msg/Time']
    h = TS.types['std_msgs/msg/Header'](stamp=T(sec=t_ns // 10**9, nanosec=t_ns % 10**9),
                                        frame_id='cam')
    msg = TS.types['sensor_msgs/msg/Image'](header=h, height=frame.shape[0],
                                            width=frame.shape[1], encoding='rgb8',
                                            is_bigendian=0, step=frame.shape[1] * 3,
                                            data=frame.reshape(-1))
    return bytes(TS.serialize_cdr(msg, 'sensor_msgs/msg/Image'))


def _joint_state(t_ns, pos):
    T = TS.types['builtin_interfaces/msg/Time']
    h = TS.types['std_msgs/msg/Header'](stamp=T(sec=t_ns // 10**9, nanosec=t_ns % 10**9),
                                        frame_id='')
    names = ['joint1', 'joint2', 'joint3', 'joint4', 'joint5', 'joint6', 'gripper']
    msg = TS.types['sensor_msgs/msg/JointState'](header=h, name=names,
                                                 position=np.asarray(pos, np.float64),
                                                 velocity=np.zeros(0), effort=np.zeros(0))
    return bytes(TS.serialize_cdr(msg, 'sensor_msgs/msg/JointState'))


def _write_paired(path, clip, with_sim=True, objects=None):
    topics = [TopicSpec('/joint_states', 'sensor_msgs/msg/JointState'),
              TopicSpec('/real/cameras/front/image_raw', 'sensor_msgs/msg/Image'),
              TopicSpec(CMD, 'trajectory_msgs/msg/JointTrajectory')]
    if with_sim:
        topics.append(TopicSpec('/sim/cameras/front/image_raw', 'sensor_msgs/msg/Image'))
    if objects is not None:
        topics.append(TopicSpec(sim_objects_topic('front'), 'sensor_msgs/msg/Image'))
    w = EpisodeBagWriter(path, topics)
    w.open()
    for i in range(len(clip.real)):
        t = (i + 1) * 10**8
        w.write('/joint_states', _joint_state(t, clip.actions[i]), t)
        w.write('/real/cameras/front/image_raw', _image(t, clip.real[i]), t)
        if with_sim:
            w.write('/sim/cameras/front/image_raw', _image(t, clip.sim[i]), t)
        if objects is not None:
            w.write(sim_objects_topic('front'), mono8_image_cdr(objects[i], t, ''), t)
    w.close()
    return path


def test_paired_episode_reads_back_and_missing_stream_is_named(tmp_path):
    clip = synthetic_pair(5, 12, 16, seed=3)
    got = load_paired_episode(_write_paired(tmp_path / 'ep', clip))
    np.testing.assert_array_equal(got.real, clip.real)
    np.testing.assert_array_equal(got.sim, clip.sim)
    # no command published yet: the action falls back to the measured joint position
    np.testing.assert_allclose(got.actions, clip.actions, atol=1e-6)
    with pytest.raises(MissingStreamError, match='/sim/cameras/front/image_raw'):
        load_paired_episode(_write_paired(tmp_path / 'nosim', clip, with_sim=False))


def test_object_masks_of_a_pair_become_loss_weights_at_the_model_resolution(tmp_path):
    """The replay's object ids come back per frame; the dataset gives the fraction of each
    model pixel they cover, only when the loss weighs objects (zeros otherwise or without)."""
    clip = synthetic_pair(5, 12, 16, seed=3)
    objects = np.zeros((5, 12, 16), np.uint8)
    objects[:, 4:8, 8:12] = 1                           # a 4x4 object in the right half
    got = load_paired_episode(_write_paired(tmp_path / 'ep', clip, objects=objects))
    np.testing.assert_array_equal(got.objects, objects)
    assert load_paired_episode(_write_paired(tmp_path / 'plain', clip)).objects is None
    cfg = tiny_config(frames=4, height=12, width=16, patch_size=4, object_loss_weight=5.0)
    item = ClipDataset([got], cfg)[0]
    assert item['objects'].shape == (4, 1, 12, 16)
    np.testing.assert_array_equal(item['objects'][0, 0].numpy(), objects[0] > 0)
    half = tiny_config(frames=4, height=4, width=8, patch_size=4, object_loss_weight=5.0)
    small = ClipDataset([got], half)[0]['objects'][0, 0]
    assert small.shape == (4, 8) and small[:, :3].sum() == 0 and small[1:3, 4:6].min() > 0.2
    assert ClipDataset([got], tiny_config(frames=4, height=12, width=16, patch_size=4)
                       )[0]['objects'].abs().sum() == 0   # weight 1: not needed
    with pytest.raises(InputShapeError, match='object masks'):
        PairedClip(clip.real, clip.sim, clip.actions, 'x', objects=objects[:, :6])
    with pytest.raises(ConfigError, match='object_loss_weight'):
        tiny_config(object_loss_weight=0.0)


def test_paired_dir_skips_hidden_work_in_progress(tmp_path):
    clip = synthetic_pair(5, 12, 16, seed=3)
    _write_paired(tmp_path / 'ep', clip)
    # a replay's unfinished output (its bag closed, not yet renamed) and a set-aside failure
    _write_paired(tmp_path / '.ep2.partial', clip, with_sim=False)
    _write_paired(tmp_path / '.ep3.failed', clip, with_sim=False)
    (clips,) = load_paired_dir(tmp_path)
    assert clips.name == 'ep'
    np.testing.assert_array_equal(clips.sim, clip.sim)


def test_latent_space_needs_an_existing_autoencoder(tmp_path):
    with pytest.raises(AutoencoderNotFoundError, match='autoencoder_path is not set'):
        LatentCodec.from_pretrained(None)
    with pytest.raises(AutoencoderNotFoundError, match='nothing is downloaded'):
        LatentCodec.from_pretrained(tmp_path / 'missing')
