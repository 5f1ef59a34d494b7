"""The main job's video table picks trajectories by the lab's region of their layout and by
their objects' colouring, and still has rows when a small run laid none out in the lab's boxes."""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / 'scripts'))
import main_job  # noqa: E402


def test_up_to_n_per_lab_region_and_colouring_and_nothing_from_elsewhere_when_a_box_has_some():
    layout = [('other', False), ('id', False), ('id', True), ('id', False), ('id', False),
              ('ood', True), ('other', True), ('id', True)]
    eps = [(Path(f'e{i}'), r, c) for i, (r, c) in enumerate(layout)]
    picked = main_job.video_episodes(eps, 2)
    assert picked == {'id': [Path('e1'), Path('e3')], 'ood': [],
                      'id recoloured': [Path('e2'), Path('e7')], 'ood recoloured': [Path('e5')],
                      'other': []}


def test_layouts_outside_both_boxes_still_give_rows():
    eps = [(Path(f'e{i}'), 'other', i % 2 == 1) for i in range(4)]
    assert main_job.video_episodes(eps, 2) == {'id': [], 'ood': [], 'id recoloured': [],
                                               'ood recoloured': [],
                                               'other': [Path('e0'), Path('e1')]}
