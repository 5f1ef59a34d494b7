"""An interrupted record stage resumes: closed episodes (failed ones too) are kept and their
layout seeds not recorded again; an episode it never closed is moved aside, not deleted."""
import sys
from pathlib import Path

from comsim_core.episodes.sidecar import write_sidecar
from comsim_core.ros.episode_runner import recorded_episodes, recording_plan

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / 'scripts'))
import main_job  # noqa: E402


def episode(root: Path, name: str, seed: int, status: str, success: bool | None,
            closed: bool = True) -> Path:
    path = root / name
    path.mkdir(parents=True)
    if closed:
        (path / 'metadata.yaml').write_text('rosbag2_bagfile_information: {}\n')
    write_sidecar(path, {'status': status, 'success': success,
                         'metadata': {'task': 'move_card', 'seed': seed, 'source': 'real'}})
    return path


def test_the_plan_counts_seeds_up_across_tasks():
    assert recording_plan(['move_card', 'stack_blocks'], 2, 5) == \
        [('move_card', 5), ('move_card', 6), ('stack_blocks', 7), ('stack_blocks', 8)]


def test_closed_episodes_are_kept_and_an_unclosed_one_set_aside(tmp_path):
    eps = tmp_path / 'episodes'
    episode(eps, 'episode_0000_move_card', 0, 'complete', True)
    episode(eps, 'episode_0001_move_card', 1, 'complete', False)
    episode(eps, 'episode_0002_move_card', 2, 'recording', None, closed=False)
    done = main_job.resumed_recording(eps)
    assert sorted(done) == [('move_card', 0), ('move_card', 1)]
    assert done['move_card', 0].success and not done['move_card', 1].success
    assert (eps / '.interrupted' / 'episode_0002_move_card' / 'episode.yaml').is_file()
    assert not (eps / 'episode_0002_move_card').exists()
    assert recorded_episodes(eps) == done            # the set-aside one is no longer read
    todo = [p for p in recording_plan(['move_card'], 4, 0) if p not in done]
    assert todo == [('move_card', 2), ('move_card', 3)]


def test_a_first_run_has_nothing_to_resume(tmp_path):
    assert main_job.resumed_recording(tmp_path / 'episodes') == {}


def test_an_episode_interrupted_twice_is_set_aside_twice(tmp_path):
    """The re-recorded episode gets the set-aside one's name; its own interruption is kept
    beside the first, and the resume goes on."""
    eps = tmp_path / 'episodes'
    episode(eps, 'episode_0000_move_card', 0, 'recording', None, closed=False)
    assert main_job.resumed_recording(eps) == {}
    episode(eps, 'episode_0000_move_card', 0, 'recording', None, closed=False)
    assert main_job.resumed_recording(eps) == {}
    aside = sorted(p.name for p in (eps / '.interrupted').iterdir())
    assert aside == ['episode_0000_move_card', 'episode_0000_move_card.2']


def test_a_retried_twin_stage_keeps_its_closed_calibration_and_sets_the_rest_aside(tmp_path):
    """A twin stage that failed after capturing (an object it could not find) is retried by a
    resume: the closed calibration session is kept, one never closed is captured again, and
    the earlier try's twin folder is moved aside instead of refusing to overwrite it."""
    from comsim_bench_lab.calibration_rig import capture_calibration
    from comsim_core.episodes import is_complete

    captured = []

    def capture(path):
        captured.append(path)
        return capture_calibration(main_job.LAB_YAML, main_job.REALISM_YAML, path, 1, seed=0)

    first = main_job.calibration_session(tmp_path, capture)
    assert is_complete(first) and len(captured) == 1
    assert main_job.calibration_session(tmp_path, capture) == first and len(captured) == 1
    write_sidecar(first, {'status': 'recording'})          # as if killed while capturing
    assert main_job.calibration_session(tmp_path, capture) == first and len(captured) == 2
    assert is_complete(first)
    assert (tmp_path / '.interrupted' / 'calibration_session' / 'episode.yaml').is_file()
    twin = tmp_path / 'twin' / 'paired' / 'episode_0000_move_card_dynamic'
    twin.mkdir(parents=True)
    main_job.set_aside(tmp_path, tmp_path / 'twin', 'twin', 'an earlier try did not finish')
    assert not (tmp_path / 'twin').exists()
    assert (tmp_path / '.interrupted' / 'twin' / 'paired' / twin.name).is_dir()
    main_job.set_aside(tmp_path, tmp_path / 'twin', 'twin', 'nothing there')   # first try: no-op
