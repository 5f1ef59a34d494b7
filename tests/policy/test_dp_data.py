"""Episode decoding (actions from commands), sources, frame cache, windows, crops."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from comsim_policy.data.augment import crop
from comsim_policy.data.cache import FrameCache
from comsim_policy.data.dataset import WindowDataset
from comsim_policy.data.episode_arrays import (
    EpisodeDataError,
    episode_success,
    load_episode_arrays,
)
from comsim_policy.training.data_setup import DataSpec, prepare
from fixtures.policy_episodes import (
    FRONT,
    JOINTS,
    expected_actions,
    tiny_config,
    trajectory,
    write_episode,
)


def test_actions_are_commands_in_force_with_next_state_fallback(tmp_path):
    path = write_episode(tmp_path, seed=2, n_frames=12)
    arr = load_episode_arrays(path, tiny_config())
    assert len(arr) == 12 and arr.source == 'real'          # default source
    np.testing.assert_allclose(arr.state, trajectory(2, np.arange(12) / 10), atol=1e-6)
    np.testing.assert_allclose(arr.action, expected_actions(2, 12), atol=1e-6)
    assert arr.commands_used == 12                           # every frame has a goal
    assert arr.images[FRONT].shape == (12, 24, 32, 3) and arr.native_sizes[FRONT] == [48, 64]


def test_joint_order_follows_the_policy_and_no_commands_falls_back(tmp_path):
    names = JOINTS[::-1]
    path = write_episode(tmp_path, seed=1, n_frames=8, commands=False, joint_names=names,
                         source='pseudo_real')
    arr = load_episode_arrays(path, tiny_config())
    # q was written in reversed order under reversed names: the values per joint are unchanged
    np.testing.assert_allclose(arr.state, trajectory(1, np.arange(8) / 10)[:, ::-1], atol=1e-6)
    np.testing.assert_allclose(arr.action[:-1], arr.state[1:])
    assert arr.commands_used == 0 and arr.source == 'pseudo_real'
    assert load_episode_arrays(path, tiny_config(), source='sim').source == 'sim'


def test_missing_joint_is_named(tmp_path):
    path = write_episode(tmp_path, seed=1, n_frames=4, joint_names=[*JOINTS[:6], 'finger'])
    with pytest.raises(EpisodeDataError, match=r"lacks joints \['gripper'\]"):
        load_episode_arrays(path, tiny_config())


def test_cache_hits_and_is_keyed_by_content_and_settings(tmp_path):
    path = write_episode(tmp_path / 'eps', seed=0, n_frames=10)
    cfg = tiny_config()
    cache = FrameCache(tmp_path / 'cache', cfg)
    a = cache.get(path)
    b = cache.get(path)
    assert (cache.misses, cache.hits) == (1, 1)
    np.testing.assert_array_equal(a.images[FRONT], b.images[FRONT])
    np.testing.assert_array_equal(a.action, b.action)
    assert a.source == b.source and a.native_sizes == b.native_sizes
    bigger = tiny_config()
    bigger.image_size = [32, 40]
    assert FrameCache(tmp_path / 'cache', bigger).entry_dir(path) != cache.entry_dir(path)
    key = cache.entry_dir(path)
    (path / 'episode.yaml').write_text((path / 'episode.yaml').read_text() + '\n# edited\n')
    assert cache.entry_dir(path) != key                      # edited episode: new entry
    assert DataSpec.parse('/x/y:pseudo_real') == DataSpec(Path('/x/y'), 'pseudo_real')
    assert DataSpec.parse('/x/y').source is None


def test_windows_pad_at_the_edges_and_crop(tmp_path):
    path = write_episode(tmp_path, seed=0, n_frames=10)
    cfg = tiny_config()
    arr = load_episode_arrays(path, cfg)
    ds = WindowDataset([arr], cfg, train=False)
    assert len(ds) == 10
    first, last = ds[0], ds[9]
    key = cfg.camera_keys[0]
    assert first['images'][key].shape == (2, 3, 20, 28)
    np.testing.assert_allclose(first['state'].numpy(), arr.state[[0, 0]])     # repeats step 0
    np.testing.assert_allclose(first['action'].numpy()[:2], arr.action[[0, 0]])
    np.testing.assert_allclose(last['action'].numpy()[1:], np.repeat(arr.action[9:], 7, 0))
    mid = ds[5]
    np.testing.assert_allclose(mid['action'].numpy(), arr.action[[4, 5, 6, 7, 8, 9, 9, 9]])
    frames = np.arange(2 * 6 * 8 * 3, dtype=np.int32).reshape(2, 6, 8, 3)
    centre = crop(frames, (4, 4))
    np.testing.assert_array_equal(centre, frames[:, 1:5, 2:6])
    rng = np.random.default_rng(0)
    crops = {crop(frames, (4, 4), rng)[0, 0, 0, 0] for _ in range(50)}
    assert len(crops) > 3                                    # random offsets vary
    one = crop(frames, (4, 4), np.random.default_rng(1))
    assert one.shape == (2, 4, 4, 3)
    np.testing.assert_array_equal(one[1] - one[0], 144)  # same offset for both steps


def test_failed_demonstrations_are_left_out_unless_asked_for(tmp_path):
    """The recorder marks a demonstration that failed its task; it is not one to imitate."""
    ok = write_episode(tmp_path / 'eps', seed=0, n_frames=6)
    bad = write_episode(tmp_path / 'eps', seed=1, n_frames=6, success=False)
    assert (episode_success(ok), episode_success(bad), episode_success(tmp_path)) == \
        (True, False, None)
    cfg = tiny_config()
    data = prepare([DataSpec(tmp_path / 'eps')], cfg, FrameCache(None, cfg))
    assert [e.name for e in data.train] == [ok.name]
    assert data.summary['failed_skipped'] == 1 and data.summary['episodes'] == 1
    cfg.train.include_failed = True
    data = prepare([DataSpec(tmp_path / 'eps')], cfg, FrameCache(None, cfg))
    assert len(data.train) == 2 and data.summary['failed_skipped'] == 0
    cfg.train.include_failed = False
    with pytest.raises(EpisodeDataError, match='marked failed'):
        prepare([DataSpec(bad)], cfg, FrameCache(None, cfg))


def test_recovered_or_unjudged_episodes_are_not_demonstrations_until_a_person_confirms(tmp_path):
    """Only success: true on a complete episode counts; comsim-recover marks a recovered
    episode (which kept success: true before) and only a person's confirmation brings it back."""
    from comsim_core.episodes.sidecar import update_sidecar  # noqa: PLC0415
    from comsim_teleop.recording.recover_cli import main as recover_main  # noqa: PLC0415

    ok = write_episode(tmp_path / 'eps', seed=0, n_frames=6)
    recovered = write_episode(tmp_path / 'eps', seed=1, n_frames=6)
    unjudged = write_episode(tmp_path / 'eps', seed=2, n_frames=6)
    update_sidecar(recovered, status='recovered')       # what recovery left, success: true kept
    update_sidecar(unjudged, status='interrupted', success=None)
    assert [episode_success(p) for p in (ok, recovered, unjudged)] == [True, False, False]
    cfg = tiny_config()
    data = prepare([DataSpec(tmp_path / 'eps')], cfg, FrameCache(None, cfg))
    assert [e.name for e in data.train + data.val] == [ok.name]
    assert data.summary['failed_skipped'] == 2
    with pytest.raises(EpisodeDataError, match='--confirm-success'):
        prepare([DataSpec(recovered)], cfg, FrameCache(None, cfg))
    assert recover_main(['--confirm-success', 'ann', str(recovered)]) == 0
    assert episode_success(recovered) is True
    data = prepare([DataSpec(tmp_path / 'eps')], cfg, FrameCache(None, cfg))
    assert sorted(e.name for e in data.train + data.val) == sorted([ok.name, recovered.name])


def test_episode_without_joint_states_is_a_one_line_user_error(tmp_path):
    """comsim-policy-train used to traceback here; now: the episode, the topic, what is there."""
    from comsim_core.errors import UserError, user_message  # noqa: PLC0415

    path = write_episode(tmp_path, seed=3, n_frames=6)
    cfg = tiny_config()
    cfg.joint_topic = '/robot/joint_states'
    with pytest.raises(UserError) as err:
        load_episode_arrays(path, cfg)
    message = user_message(err.value)
    assert message is not None and '\n' not in message
    assert str(path) in message and "'/robot/joint_states'" in message
    assert '/joint_states' in message.split('topics found:')[1] and FRONT in message
