"""The main job's video table picks trajectories by the lab's region of their layout, and still
has rows when a small run laid none out in the lab's boxes."""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / 'scripts'))
import main_job  # noqa: E402


def test_up_to_n_per_lab_region_and_nothing_from_elsewhere_when_a_box_has_some():
    eps = [(Path(f'e{i}'), r) for i, r in enumerate(['other', 'id', 'id', 'id', 'ood', 'other'])]
    picked = main_job.video_episodes(eps, 2)
    assert picked == {'id': [Path('e1'), Path('e2')], 'ood': [Path('e4')], 'other': []}


def test_layouts_outside_both_boxes_still_give_rows():
    eps = [(Path(f'e{i}'), 'other') for i in range(4)]
    assert main_job.video_episodes(eps, 2) == {'id': [], 'ood': [],
                                               'other': [Path('e0'), Path('e1')]}
