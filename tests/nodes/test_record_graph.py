"""The recording graph of launch/record.launch.py, each node its own process over DDS:
bench lab + scripted teleop + recorder, driven by the episode runner, read back as an episode."""
from pathlib import Path

import numpy as np
import pytest
import rclpy
from std_srvs.srv import Trigger

from comsim_core.episodes.reader import Episode
from comsim_core.ros.episode_runner import EpisodeRunner, RunnerError
from comsim_core.ros.graph import Graph, graph_from_launch

ROOT = Path(__file__).resolve().parents[2]
COMMANDS = '/joint_trajectory_controller/joint_trajectory'
pytestmark = pytest.mark.ros


def test_unattended_episode_over_dds(tmp_path):
    out = tmp_path / 'episodes'
    specs = graph_from_launch(ROOT / 'launch' / 'record.launch.py', {}, {
        'recorder': {'output_dir': str(out)},
        'bench_lab': {'camera_rate_hz': '15.0'}})
    assert [s.name for s in specs] == ['bench_lab', 'teleop', 'recorder']
    assert {s.overrides['use_sim_time'] for s in specs} == {'true'}   # bench_lab's default
    with Graph(specs, log_dir=tmp_path / 'logs') as graph:
        rclpy.init(args=['--ros-args', '--params-file', str(ROOT / 'config/episode_runner.yaml'),
                         '-p', 'tasks:=[move_card]', '-p', 'episodes_per_task:=1',
                         '-p', 'use_sim_time:=true'])
        try:
            runner = EpisodeRunner()
            for name in ('/bench_lab/reset', '/recorder/start', '/teleop/start_scripted'):
                client = runner.create_client(Trigger, name)
                assert client.wait_for_service(timeout_sec=90), \
                    (name, [(p.read_text()[-2000:]) for p in (tmp_path / 'logs').iterdir()])
            graph.check_alive()
            # A bad request is refused with the allowed names, and the lab keeps running.
            runner.set_params('bench_lab', task='no_such_task')
            with pytest.raises(RunnerError, match='stack_blocks'):
                runner.trigger('/bench_lab/reset')
            graph.check_alive()
            results = runner.run_all(print)
            runner.destroy_node()
        finally:
            rclpy.shutdown()
    assert len(results) == 1
    result = results[0]
    assert result.success, result.message

    with Episode.open(result.path) as ep:
        assert ep.metadata['status'] == 'complete' and ep.metadata['success'] is True
        assert ep.metadata['metadata']['task'] == 'move_card'
        # The runner labels the episode with typed fields, not free-text notes.
        assert (ep.meta.task, ep.meta.seed, ep.meta.region, ep.meta.source) == \
            ('move_card', result.seed, 'id', 'real')
        calib = ep.metadata['metadata']['calibration']
        assert '/cameras/front/camera_info' in calib  # the calibration in use is stored
        streams = ep.streams
        assert streams['/cameras/front/image_raw'].count > 30
        cams = ['/cameras/front/image_raw', '/cameras/side/image_raw']
        frames = list(ep.frames(cams, command_topic=COMMANDS, skip_unaligned=True))
        commands = ep.commands(COMMANDS)
        points = [len(m.points) for _, m in ep.messages(COMMANDS)]
    assert len(frames) > 30
    assert frames[0].images[cams[0]].shape == (240, 320, 3)
    commanded = [f for f in frames if f.command is not None]
    assert len(commanded) > 0.5 * len(frames)
    # The arm follows its commands: small tracking error on the arm joints.
    err = np.array([np.abs(f.joint_position[:6] - f.command[:6]).max() for f in commanded])
    assert np.median(err) < 0.05, np.median(err)
    # The scripted teleop sends its program ahead; the labels are that program, one every
    # 20 ms tick even where the teleop process missed ticks.
    assert np.median(points) > 10, points[:20]
    gaps = np.diff(commands.t_ns) * 1e-9
    assert np.median(gaps) == pytest.approx(0.02, abs=1e-3) and gaps.max() < 0.03, gaps.max()
    # Images change over the episode (the arm moves in view).
    first, last = frames[0].images[cams[0]], frames[-1].images[cams[0]]
    assert np.abs(first.astype(int) - last.astype(int)).mean() > 1.0
