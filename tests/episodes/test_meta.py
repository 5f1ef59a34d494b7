"""EpisodeMeta: typed sidecar metadata, read back from a recorded episode."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import joint_state_raw

from comsim_core.episodes import Episode, EpisodeError, EpisodeMeta, read_meta
from comsim_core.episodes.topics import TopicSpec
from comsim_teleop.recording import EpisodeRecorder


def test_round_trip_through_a_recorded_episode(tmp_path: Path) -> None:
    meta = EpisodeMeta(task='move_card', seed=7, region='ood', variant='red_card',
                       source='real', operator='scripted-expert')
    rec = EpisodeRecorder(tmp_path, [TopicSpec('/joint_states', 'sensor_msgs/msg/JointState')],
                          min_free_bytes=0)
    path = rec.start({**meta.to_dict(), 'notes': 'seed=1 region=id (people write anything)'})
    rec.on_message('/joint_states', joint_state_raw(10**9, [0.0] * 7), 10**9)
    rec.stop(True)
    assert read_meta(path) == meta
    with Episode.open(path) as ep:
        assert ep.meta == meta and ep.meta.seed == 7


def test_unset_fields_and_other_keys() -> None:
    meta = EpisodeMeta.from_dict({'task': 'stack_blocks', 'randomisation': {}, 'seed': None})
    assert meta == EpisodeMeta(task='stack_blocks')
    assert meta.to_dict() == {'task': 'stack_blocks', 'seed': None, 'region': '', 'variant': '',
                              'source': '', 'operator': ''}
    assert EpisodeMeta.from_sidecar(None) == EpisodeMeta()
    assert read_meta(Path('/nonexistent/episode')) == EpisodeMeta()


@pytest.mark.parametrize('bad, match', [({'seed': '3'}, 'seed must be an integer'),
                                        ({'seed': True}, 'seed must be an integer'),
                                        ({'region': 2}, r"\['region'\] must be text")])
def test_wrong_types_name_the_episode(bad: dict, match: str) -> None:
    with pytest.raises(EpisodeError, match=f'ep7/episode.yaml: metadata.*{match}'):
        EpisodeMeta.from_dict(bad, 'ep7/episode.yaml')


def test_ros_parameters_have_no_null_seed() -> None:
    params = EpisodeMeta(task='move_card', operator='policy:tiny').to_params()
    assert params['seed'] == -1 and isinstance(params['seed'], int)
    assert EpisodeMeta.from_params(params) == EpisodeMeta(task='move_card', operator='policy:tiny')
    assert EpisodeMeta.from_params({**params, 'seed': 0}).seed == 0
