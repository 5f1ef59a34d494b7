"""The in-process evaluator on the real bench lab (hidden realism included) with the real
`PolicyRunner` on tiny real checkpoints: rollouts are deterministic for a seed, every
checkpoint sees the same layouts, the loop can succeed (the scripted expert through the same
environment) and the in-process controller sends what the DDS policy node sends."""
from __future__ import annotations

import json
import math
import re
import time
from pathlib import Path

import numpy as np
import pytest
import yaml
from policy_node_support import start_policy, stop_all
from real_checkpoint import write_checkpoint
from sensor_msgs.msg import Image, JointState
from std_srvs.srv import SetBool
from trajectory_msgs.msg import JointTrajectory

from comsim_bench_lab.sim_env import BenchLabEnvironment
from comsim_core.episodes.reader import Episode
from comsim_core.robot.model import DEFAULT_ARM_PATH, RobotModel
from comsim_core.ros.messages import IMAGE_QOS, SENSOR_QOS, image_msg
from comsim_policy.evaluation.cli import main
from comsim_policy.evaluation.in_process import (
    RolloutSettings,
    build_controller,
    make_jobs,
    run_rollout,
)
from comsim_policy.evaluation.results import Evaluation, Rollout
from comsim_policy.inference import PolicyRunner, limit_cpu_threads

CAMS = ['/cameras/front/image_raw', '/cameras/side/image_raw']
NATIVE = (240, 320)
# 0.6 sim s of policy per rollout: several chunks of the tiny checkpoint, cheap to render.
SHORT = RolloutSettings(latency_s=0.05, add_measured_latency=False, timeout_factor=0.0,
                        timeout_margin_s=0.6, check_every_s=0.3, settle_s=0.2,
                        stale_after_s=2.0)


@pytest.fixture(scope='module')
def env():
    e = BenchLabEnvironment({})   # config/bench_lab/lab.yaml with the hidden realism profile
    yield e
    e.close()


@pytest.fixture(scope='module')
def checkpoint(tmp_path_factory):
    limit_cpu_threads()   # as the evaluator and its workers do: two threads are far slower here
    return write_checkpoint(tmp_path_factory.mktemp('ckpt') / 'tiny', CAMS, NATIVE)


def test_a_rollout_is_a_function_of_its_seed(env, checkpoint):
    """Seed A, seed B, seed A in one process: A's second run gives the same result, the same
    renders and the same commanded targets (nothing carries over: controller, sensor noise,
    sim clock), and B differs."""
    runner = PolicyRunner.load(checkpoint, device='cpu')

    def roll(seed):
        ctl = build_controller(runner, {}, SHORT.stale_after_s)
        return run_rollout(env, ctl, 'move_card', seed, 'id', '', SHORT)

    a1, b, a2 = roll(1000), roll(1001), roll(1000)
    assert a1.chunks >= 3 and len(a1.commands) >= 3, a1
    assert (a1.success, a1.message, a1.sim_s, a1.renders) == \
        (a2.success, a2.message, a2.sim_s, a2.renders)
    assert [t for t, _ in a1.commands] == [t for t, _ in a2.commands]
    # How far the card moved once the policy took over: recorded, and the same for the seed
    # (0.6 s from home is too short to reach it).
    assert set(a1.moved_m) == {'card'} and a1.moved_m == a2.moved_m
    assert 0.0 <= a1.moved_m['card'] < 0.01
    for (_, q1), (_, q2) in zip(a1.commands, a2.commands, strict=True):
        np.testing.assert_array_equal(q1, q2)
    assert not all(np.array_equal(q1, q2) for (_, q1), (_, q2) in zip(a1.commands, b.commands))
    # Frames only where the policy looks: two per request (n_obs_steps = 2) per camera, fewer
    # than one per control tick once chunks overlap, and far below the node's 30 Hz stream.
    ticks = (a1.sim_s + SHORT.settle_s) * 10
    assert a1.renders <= 2 * len(CAMS) * (a1.chunks + 1) and a1.renders < 30 * a1.sim_s * 2
    assert a1.renders <= 2 * ticks


def test_a_checkpoint_for_other_cameras_is_refused_in_one_line(env, tmp_path):
    from comsim_core.errors import UserError
    ckpt = write_checkpoint(tmp_path / 'small', CAMS, (24, 32))
    ctl = build_controller(PolicyRunner.load(ckpt, device='cpu'), {}, SHORT.stale_after_s)
    with pytest.raises(UserError, match='does not match the environment.*240x320.*24x32'):
        run_rollout(env, ctl, 'move_card', 1000, 'id', '', SHORT, expert_s=1.0)


def test_the_scripted_expert_succeeds_through_the_environment_and_standing_still_fails(env):
    """The loop's environment can be solved: the expert's targets through `command_positions`
    and `step` (the calls a rollout makes) complete move_card; doing nothing does not."""
    seed = 1000
    duration = env.expert_duration('move_card', seed, 'id', '')
    env.reset('move_card', seed, 'id', '')
    expert = env.expert(seed)
    n = round(0.02 / env.timestep)
    while (q := expert.command(env.time, env.joint_state()[0])) is not None:
        env.command_positions(q)
        env.step(n)
    env.step(round(0.6 / env.timestep))
    assert env.time == pytest.approx(duration + 0.6, abs=0.05)
    assert env.check_success()[0]
    env.reset('move_card', seed, 'id', '')
    env.step(round((duration + 0.6) / env.timestep))
    ok, why = env.check_success()
    assert not ok and 'zone' in why


def test_paired_arms_see_the_same_layouts_through_the_cli(tmp_path, checkpoint, env, capsys):
    """Two checkpoints, two seeds, two spawned workers: each layout seed gives identical object
    poses in two environments, the two checkpoints' episodes of one seed start from the same
    frame (pixel for pixel, realism noise included) and different seeds do not; episodes carry
    their metadata, the first rollout of each cell gets a contact sheet, results.json the
    paired test."""
    other = write_checkpoint(tmp_path / 'wide', CAMS, NATIVE, action_range=3.0)
    second = BenchLabEnvironment({})
    try:
        for seed in (1000, 1001):
            env.reset('move_card', seed, 'ood', '')
            second.reset('move_card', seed, 'ood', '')
            a, b = env.object_poses(), second.object_poses()
            assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)
    finally:
        second.close()
    cfg = tmp_path / 'eval.yaml'
    cfg.write_text(yaml.safe_dump({'evaluation': {
        'timeout_factor': 0.0, 'timeout_margin_s': 0.6, 'settle_s': 0.2, 'sheets': 1}}))
    out = tmp_path / 'eval'
    assert main(['--checkpoints', str(checkpoint), str(other), '--tasks', 'move_card',
                 '--regions', 'ood', '--rollouts', '2', '--workers', '2', '--out', str(out),
                 '--config', str(cfg)]) == 0
    table = capsys.readouterr().out
    assert '| tiny | move_card | ood | default | 0/2 |' in table and 'McNemar' in table
    saved = json.loads((out / 'results.json').read_text())
    rollouts = [Rollout(**r) for r in saved['rollouts']]
    assert sorted((r.checkpoint, r.seed) for r in rollouts) == \
        [('tiny', 1000), ('tiny', 1001), ('wide', 1000), ('wide', 1001)]
    assert saved['paired'][0]['pairs'] == 2 and saved['paired'][0]['p_mcnemar'] == 1.0
    first = {}
    for r in rollouts:
        with Episode.open(r.bag) as ep:
            meta = ep.metadata['metadata']
            assert (meta['task'], meta['seed'], meta['region']) == ('move_card', r.seed, 'ood')
            assert meta['operator'] == f'policy:{r.checkpoint}'
            assert ep.streams[CAMS[0]].count == r.renders // 2
            assert ep.streams['/joint_trajectory_controller/joint_trajectory'].count >= 1
            first[r.checkpoint, r.seed] = next(iter(ep.images(CAMS[0])))[1]
        assert bool(r.sheet) == (r.seed == 1000)
    np.testing.assert_array_equal(first['tiny', 1000], first['wide', 1000])
    np.testing.assert_array_equal(first['tiny', 1001], first['wide', 1001])
    assert not np.array_equal(first['tiny', 1000], first['tiny', 1001])


def test_an_interrupted_evaluation_resumes_from_its_journal(tmp_path, checkpoint, capsys):
    """Killed after one rollout, mid-way through writing the next line: `--resume` keeps the
    journalled rollout (same outcome as running it again), runs only the other, and a
    retrained checkpoint (other weights, same folder) or other settings reuse nothing."""
    import shutil
    ckpt = shutil.copytree(checkpoint, tmp_path / 'tiny')
    cfg = tmp_path / 'eval.yaml'
    cfg.write_text(yaml.safe_dump({'evaluation': {
        'timeout_factor': 0.0, 'timeout_margin_s': 0.6, 'settle_s': 0.2, 'sheets': 0,
        'saved_episodes': 1}}))
    out = tmp_path / 'eval'
    args = ['--checkpoints', str(ckpt), '--tasks', 'move_card', '--regions', 'id',
            '--rollouts', '2', '--workers', '1', '--out', str(out), '--config', str(cfg)]

    def outcomes():
        saved = json.loads((out / 'results.json').read_text())['rollouts']
        return [(r['seed'], r['success'], r['message'], r['sim_s'], r['renders'], r['chunks'])
                for r in saved]

    journal = out / 'rollouts.jsonl'
    assert main(args) == 0
    full = outcomes()
    saved = json.loads((out / 'results.json').read_text())['rollouts']
    assert [bool(r['bag']) for r in saved] == [True, False]        # the cell's first only
    assert [p.name for p in (out / 'tiny' / 'episodes').iterdir()
            if not p.name.startswith('.')] == ['move_card_id_default_seed1000']
    lines = journal.read_text().splitlines()
    assert [json.loads(ln)['rollout']['seed'] for ln in lines] == [1000, 1001]
    journal.write_text(lines[0] + '\n' + lines[1][:40])        # killed mid-write
    capsys.readouterr()
    assert main([*args, '--resume']) == 0
    assert 'resumed: 1 of 2 rollouts' in capsys.readouterr().err
    assert outcomes() == full
    assert [json.loads(ln)['rollout']['seed'] for ln in journal.read_text().splitlines()[2:]] \
        == [1001]
    # nothing left to run: every rollout comes from the journal, none is appended (what is
    # saved of a rollout is not a setting of its outcome)
    cfg.write_text(cfg.read_text().replace('saved_episodes: 1', 'saved_episodes: -1'))
    n = len(journal.read_text().splitlines())
    assert main([*args, '--resume']) == 0 and outcomes() == full
    assert 'resumed: 2 of 2' in capsys.readouterr().err
    assert len(journal.read_text().splitlines()) == n
    # a retrained checkpoint in the same folder is another policy: all run again
    write_checkpoint(ckpt, CAMS, NATIVE, action_range=3.0)
    assert main([*args, '--resume']) == 0
    assert 'resumed' not in capsys.readouterr().err
    assert len(journal.read_text().splitlines()) == n + 2
    # other settings (a longer timeout): nothing reused either
    cfg.write_text(yaml.safe_dump({'evaluation': {
        'timeout_factor': 0.0, 'timeout_margin_s': 0.9, 'settle_s': 0.2, 'sheets': 0,
        'saved_episodes': 0}}))
    assert main([*args, '--resume']) == 0
    assert 'resumed' not in capsys.readouterr().err


def test_a_checkpoint_trained_for_other_tasks_is_not_evaluated_on_them(tmp_path, checkpoint):
    import shutil
    only = shutil.copytree(checkpoint, tmp_path / 'stack_only')
    cfg = yaml.safe_load((only / 'config.yaml').read_text())
    (only / 'config.yaml').write_text(yaml.safe_dump({**cfg, 'tasks': ['stack_blocks']}))
    jobs = make_jobs({checkpoint: 'any', only: 'stack'}, ['stack_blocks', 'move_card'], 2,
                     ['id', 'ood'], [''], 1000, log=lambda s: None)
    assert sorted({(j.name, j.task) for j in jobs}) == \
        [('any', 'move_card'), ('any', 'stack_blocks'), ('stack', 'stack_blocks')]
    # paired arms: the same seeds for every checkpoint
    seeds: dict[tuple, list[int]] = {}
    for j in jobs:
        seeds.setdefault((j.name, j.task, j.region), []).append(j.seed)
    assert len(seeds) == 6 and set(map(tuple, seeds.values())) == {(1000, 1001)}


def test_paired_table_counts_discordant_pairs_by_seed():
    def r(name, seed, ok):
        return Rollout(name, 'move_card', 'id', '', seed, ok, '', 1.0, 2.0)
    a = [r('a', s, s < 6) for s in range(10)]        # 6/10
    b = [r('b', s, s == 9) for s in range(10)]       # 1/10; 6 only-a, 1 only-b
    p = Evaluation(a + b).paired()
    assert len(p) == 1
    assert (p[0]['successes_a'], p[0]['successes_b'], p[0]['only_a'], p[0]['only_b']) == \
        (6, 1, 6, 1)
    assert p[0]['p_mcnemar'] == pytest.approx(2 * 8 / 128)   # (1 + 7) / 2^7, two-sided
    row = Evaluation(a).table()[0]
    assert row['wilson_95'] == pytest.approx([0.3127, 0.8318], abs=1e-4)
    assert row['s_per_rollout'] == 2.0


@pytest.mark.ros
def test_in_process_controller_sends_the_dds_nodes_first_chunk(ros_node, spin_until, tmp_path):
    """Same checkpoint, same still observation (joint state, one image per camera): the chunk
    the policy node publishes over DDS equals the in-process controller's rows due at the same
    times (noise restarts at seed 0 on enable in both; the velocity clamp, the only
    timing-dependent shaping, is lifted so the rows do not depend on when each arrived)."""
    size = (24, 32)
    cams = ['/test_cams/front/image_raw', '/test_cams/side/image_raw']
    ckpt = write_checkpoint(tmp_path / 'ckpt', cams, size)
    # The arm with velocity limits that never bind: the clamp starts from the time a chunk
    # arrives, which differs between the two paths; the chunks themselves must not.
    fast_arm = tmp_path / 'fast_arm.xml'
    fast_arm.write_text(re.sub(r'(name="comsim_max_velocity" data=")[^"]*',
                               r'\g<1>' + ' '.join(['1e6'] * 7),
                               Path(DEFAULT_ARM_PATH).read_text()))
    proc = start_policy(tmp_path, ckpt, robot_model=str(fast_arm))
    rng = np.random.default_rng(0)
    images = {c: rng.integers(0, 255, (*size, 3), dtype=np.uint8) for c in cams}
    robot = RobotModel.load()
    q = robot.home + 0.05
    js_pub = ros_node.create_publisher(JointState, '/joint_states', SENSOR_QOS)
    cam_pubs = {c: ros_node.create_publisher(Image, c, IMAGE_QOS) for c in cams}
    got: list[JointTrajectory] = []
    ros_node.create_subscription(JointTrajectory, '/joint_trajectory_controller/joint_trajectory',
                                 got.append, 50)
    status: dict = {}
    from std_msgs.msg import String

    from comsim_core.ros.messages import LATCHED_QOS
    ros_node.create_subscription(String, '/policy/status',
                                 lambda m: status.update(json.loads(m.data)), LATCHED_QOS)

    def publish():
        now = ros_node.get_clock().now()
        msg = JointState(name=robot.joint_names, position=q.tolist())
        msg.header.stamp = now.to_msg()
        js_pub.publish(msg)
        for c, pub in cam_pubs.items():
            pub.publish(image_msg(images[c], now.nanoseconds * 1e-9, 'cam'))

    ros_node.create_timer(0.02, publish)
    try:
        assert spin_until(ros_node, lambda: status.get('checked'), 60), \
            proc.log_path.read_text()
        client = ros_node.create_client(SetBool, '/policy/enable')
        assert spin_until(ros_node, client.service_is_ready, 15)
        future = client.call_async(SetBool.Request(data=True))
        assert spin_until(ros_node, lambda: future.done() and got, 20), proc.log_path.read_text()
        dds = got[0]
    finally:
        stop_all([proc])
    dds_rows = np.array([p.positions for p in dds.points])
    offset = dds.points[0].time_from_start.sec + dds.points[0].time_from_start.nanosec * 1e-9

    runner = PolicyRunner.load(ckpt, device='cpu')
    ctl = build_controller(runner, {'robot_model': str(fast_arm)}, 0.5)
    ctl.check_robot(robot.joint_names, {c: size for c in cams})
    t = time.time()
    for k in range(3):
        ctl.observe_joint_state(t + 0.1 * k, t + 0.1 * k, q)
        for c in cams:
            ctl.observe_image(c, t + 0.1 * k, images[c])
    now = t + 0.2
    assert ctl.set_enabled(True)[0]
    request = ctl.request(now)
    command = ctl.accept(ctl.predict(request), now)   # zero latency: every row kept
    first = round(offset * float(runner.config.control_hz))
    assert 0 <= first < len(command.targets) and len(dds_rows) == len(command.targets) - first
    np.testing.assert_allclose(dds_rows, command.targets[first:], atol=1e-5)
    assert not math.isclose(float(np.ptp(dds_rows)), 0.0)   # a real, moving chunk
