"""Finding episodes under a folder: hidden work dirs skipped, complete-only filter."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import joint_state_raw

from comsim_core.episodes import (
    PARTIAL_DIR,
    EpisodeNotFoundError,
    find_episodes,
    is_complete,
    is_episode_dir,
)
from comsim_core.episodes.paired import (
    FORMAT,
    appearance_variant_name,
    is_complete_paired,
    variant_source,
)
from comsim_core.episodes.sidecar import update_sidecar
from comsim_core.episodes.topics import TopicSpec
from comsim_teleop.recording import EpisodeRecorder

T0 = 10**9


def _recorder(out: Path) -> EpisodeRecorder:
    return EpisodeRecorder(out, [TopicSpec('/joint_states', 'sensor_msgs/msg/JointState')],
                           min_free_bytes=0)


def _episode(rec: EpisodeRecorder, task: str, close: bool = False) -> Path:
    path = rec.start({'task': task})
    for i in range(3):
        rec.on_message('/joint_states', joint_state_raw(T0 + i, [0.0] * 7), T0 + i)
    if close:
        rec.close()        # Ctrl-C: status interrupted
    else:
        rec.stop(True)
    return path


@pytest.fixture(scope='module')
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp('layout')
    rec = _recorder(root / 'real')
    done = _episode(rec, 'stack_blocks')
    _episode(rec, 'move_card', close=True)
    _episode(_recorder(root / 'real' / 'nested'), 'shake_bottle')
    # work in progress and set-aside output, as the generator and replays leave them
    shutil.copytree(done, root / 'real' / PARTIAL_DIR / done.name)
    shutil.copytree(done, root / 'real' / f'.{done.name}.failed')
    (root / 'real' / 'notes').mkdir()   # a plain folder is no episode
    return root


def test_find_skips_hidden_and_sorts(folder: Path) -> None:
    found = find_episodes(folder)
    rel = [str(p.relative_to(folder)) for p in found]
    assert rel == sorted(rel) and len(rel) == 3
    assert all(not part.startswith('.') for r in rel for part in Path(r).parts)
    assert sum(r.startswith('real/nested/') for r in rel) == 1


def test_complete_only_skips_interrupted(folder: Path) -> None:
    everything = find_episodes(folder)
    complete = find_episodes(folder, complete_only=True)
    assert len(complete) == 2 and set(complete) < set(everything)
    (interrupted,) = set(everything) - set(complete)
    assert interrupted.name.endswith('_move_card')
    assert is_episode_dir(interrupted) and not is_complete(interrupted)


def test_an_episode_is_its_own_folder(folder: Path) -> None:
    one = find_episodes(folder, complete_only=True)[0]
    assert find_episodes(one) == [one]
    assert find_episodes(str(one)) == [one]


def test_missing_folder_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(EpisodeNotFoundError, match=f'no episode folder at {tmp_path / "nope"}'):
        find_episodes(tmp_path / 'nope')
    assert find_episodes(tmp_path) == []


def test_is_complete_checks_bag_and_format(folder: Path, tmp_path: Path) -> None:
    one = shutil.copytree(find_episodes(folder, complete_only=True)[0], tmp_path / 'one')
    assert is_complete(one) and not is_complete_paired(one)
    update_sidecar(one, format=FORMAT)
    assert is_complete_paired(one) and is_complete(one, FORMAT)
    (one / 'metadata.yaml').unlink()   # a bag that never closed
    assert not is_complete(one) and not is_complete_paired(one)
    assert not is_complete(tmp_path / 'absent')


def test_appearance_variant_names_lead_back_to_their_pair():
    assert appearance_variant_name('episode_0003_move_card_dynamic', 2) == \
        'episode_0003_move_card_dynamic_app2'
    assert variant_source('episode_0003_move_card_dynamic_app2') == \
        'episode_0003_move_card_dynamic'
    assert variant_source('episode_0003_move_card_dynamic_app12') == \
        'episode_0003_move_card_dynamic'
    for plain in ('episode_0003_move_card_dynamic', 'x_app', 'x_app0', 'x_app1b', '_app1'):
        assert variant_source(plain) == plain          # not a variant: its own pair
    with pytest.raises(ValueError):
        appearance_variant_name('p', 0)
