"""The one reader of a generated layout: direct, through a filming's ``sim_source``, or none."""
from pathlib import Path

from comsim_core.episodes.generated_layout import generated_layout, object_starts
from comsim_core.episodes.sidecar import write_sidecar

LAYOUT = {'region': 'workspace',
          'objects': {'card': {'shape': 'box', 'pos': [0.45, 0.18, 0.002]},
                      'block': {'shape': 'box', 'pos': [0.30, -0.1, 0.02]}},
          'target': {'zone_center': [0.31, 0.17]}}


def episode(root: Path, name: str, metadata: dict) -> Path:
    path = root / name
    path.mkdir()
    write_sidecar(path, {'status': 'complete', 'metadata': metadata})
    return path


def test_a_generated_episode_gives_its_own_layout(tmp_path):
    sim = episode(tmp_path, 'sim', {'source': 'sim', 'randomisation': LAYOUT})
    assert generated_layout(sim) == LAYOUT
    assert object_starts(generated_layout(sim)) == {'card': [0.45, 0.18, 0.002],
                                                    'block': [0.30, -0.1, 0.02]}


def test_a_filming_gives_the_layout_of_the_episode_it_films(tmp_path):
    sim = episode(tmp_path, 'sim', {'source': 'sim', 'randomisation': LAYOUT})
    gt = episode(tmp_path, 'gt', {'source': 'gt', 'sim_source': str(sim)})
    assert generated_layout(gt)['target']['zone_center'] == [0.31, 0.17]


def test_no_layout_for_a_demo_a_lost_source_or_a_cycle(tmp_path):
    demo = episode(tmp_path, 'demo', {'source': 'real', 'operator': 'expert'})
    orphan = episode(tmp_path, 'orphan', {'source': 'gt', 'sim_source': str(tmp_path / 'gone')})
    a = episode(tmp_path, 'a', {'sim_source': str(tmp_path / 'b')})
    episode(tmp_path, 'b', {'sim_source': str(a)})
    for path in (demo, orphan, a, tmp_path / 'no_episode_here'):
        assert generated_layout(path) is None
        assert object_starts(generated_layout(path)) == {}
