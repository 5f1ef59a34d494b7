"""Bad input against every console script: one line naming the file, the key and what was
expected, exit code 2, no traceback (issue 10). Each case is a real subprocess of the installed
script; they run side by side (torch takes seconds to import) and each test reads its result."""
from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

BIN = Path(sys.executable).parent
ROOT = Path(__file__).resolve().parents[2]
ROS = '--ros-args'
PROCESS_TIMEOUT_S = 300   # a case that hangs (a node running on defaults) fails, not the suite
# torch takes ~10 s to import on an idle core, over a minute when four sessions share two
pytestmark = pytest.mark.timeout(900)


def _files(d: Path) -> None:
    """The bad (and a few good) inputs every case points at."""
    def w(name: str, text: str) -> None:
        (d / name).parent.mkdir(parents=True, exist_ok=True)
        (d / name).write_text(text)

    for node, key, bad in (('recorder', 'qos_depth', 'abc'), ('teleop', 'rate_hz', 'fast'),
                           ('twin', 'rate_hz', 'fast'), ('translate', 'steps', 'many'),
                           ('bench_lab', 'seed', 'many'), ('policy', 'device', 3)):
        w(f'{node}_type.yaml', yaml.safe_dump({node: {'ros__parameters': {key: bad}}}))
        w(f'{node}_unknown.yaml', yaml.safe_dump({node: {'ros__parameters': {'bogus': 1}}}))
        w(f'{node}_section.yaml', yaml.safe_dump({node[:-1]: {'ros__parameters': {key: 1}}}))
        w(f'{node}_syntax.yaml', f'{node}:\n  ros__parameters:\n    {key}: [1\n')
    w('policy_lr.yaml', 'train:\n  lr: fast\n')
    w('eval_key.yaml', 'evaluation:\n  rollout: 3\n')
    w('ckpt/config.yaml', 'train: {lr: fast}\n')
    w('no_weights/config.yaml', '{}\n')
    w('ns_lr.yaml', 'lr: fast\n')
    w('ns_ckpt/neural_sim.yaml', 'frames: many\n')
    w('thin_scene.yaml', yaml.safe_dump({
        'format': 'comsim-twin-scene/1', 'table': {'size': [0.6, 0.8], 'color': [1, 1, 1]},
        'objects': {'box': {'shape': 'box', 'size': 'thin', 'color': [1, 0, 0],
                            'pos': [0.4, 0, 0.02]}}}))
    w('gen.yaml', 'tasks: {move_card: {regions: {id: {x: [0, 1], y: [0, 1]}, '
                  'wide: {x: [0, 1], y: [0, 1]}}}}\nimage_scale: half\n')
    w('calib/front.yaml', 'K: [1, 2\n')
    w('lab_syntax.yaml', 'table: [1\n')
    w('bench_lab_task.yaml', yaml.safe_dump({'bench_lab': {'ros__parameters': {
        'task': 'juggle'}}}))
    w('bench_lab_realism.yaml', yaml.safe_dump({'bench_lab': {'ros__parameters': {
        'realism_profile': 'realism_bad.yaml'}}}))
    w('realism_bad.yaml', 'physics: {bogus: 1}\n')
    w('episode_runner_syntax.yaml', 'episode_runner:\n  ros__parameters:\n    seed: [1\n')
    w('teleop_source.yaml', yaml.safe_dump({'teleop': {'ros__parameters': {
        'source': 'telepathy'}}}))
    w('twin_replay.yaml', yaml.safe_dump({'twin': {'ros__parameters': {'mode': 'replay'}}}))
    (d / 'episodes').mkdir()


def _node(script, node, case, key='', expected=''):
    """A node case: params file of kind `case` for `node`, and what the line must say."""
    f = f'{node}_{case}.yaml'
    args = [ROS, '--params-file', f]
    want = {'type': [f, key, expected],
            'unknown': [f, "unknown parameter(s) ['bogus']"],
            'section': [f, f"no section for node '/{node}'", f"'/{node[:-1]}'"],
            'syntax': [f'{f}:4:', 'YAML syntax error'],
            'missing': ['params file', 'none.yaml', 'not found']}[case]
    if case == 'missing':
        args = [ROS, '--params-file', 'none.yaml']
    return (f'{script}-{case}', script, args, want)


CASES = [
    *[_node('comsim-recorder', 'recorder', c, 'qos_depth', "expects an integer (default 100), "
            "got 'abc'") for c in ('type', 'unknown', 'section', 'syntax', 'missing')],
    *[_node('comsim-teleop', 'teleop', c, 'rate_hz', "expects a number (default 50.0), "
            "got 'fast'") for c in ('type', 'unknown', 'section', 'syntax', 'missing')],
    _node('comsim-twin', 'twin', 'section'),
    _node('comsim-neural-sim-translate', 'translate', 'type', 'steps', 'expects an integer'),
    _node('comsim-bench-lab', 'bench_lab', 'unknown'),
    _node('comsim-policy', 'policy', 'section'),
    ('comsim-bench-lab-task', 'comsim-bench-lab', [ROS, '--params-file', 'bench_lab_task.yaml'],
     ["parameter 'task'", "'juggle' is not one of", 'stack_blocks']),
    ('comsim-bench-lab-realism', 'comsim-bench-lab',
     [ROS, '--params-file', 'bench_lab_realism.yaml'],
     ['realism_bad.yaml', 'physics: unknown key(s) bogus', 'known: friction_scale']),
    ('comsim-episode-runner-syntax', 'comsim-episode-runner',
     [ROS, '--params-file', 'episode_runner_syntax.yaml'],
     ['episode_runner_syntax.yaml:4:', 'YAML syntax error']),
    ('comsim-teleop-source', 'comsim-teleop', [ROS, '--params-file', 'teleop_source.yaml'],
     ["source 'telepathy' unknown", 'scripted']),
    ('comsim-twin-replay-without-bag', 'comsim-twin', [ROS, '--params-file', 'twin_replay.yaml'],
     ['mode replay needs the parameter bag']),
    ('comsim-recorder-remapped', 'comsim-recorder',
     [ROS, '-r', '__node:=rec2', '--params-file', 'recorder_type.yaml'],
     ['recorder_type.yaml', "no section for node '/rec2'", "'/recorder'"]),
    ('comsim-recorder-ros-args', 'comsim-recorder', [ROS, '--params-fle', 'x.yaml'],
     ["unknown --ros-args ['--params-fle'"]),
    ('comsim-policy-train-lr', 'comsim-policy-train',
     ['--config', 'policy_lr.yaml', '--data', 'episodes', '--out', 'out_policy'],
     ['policy_lr.yaml', "train.lr: expected a number, got 'fast'"]),
    # over DDS the policy node exits on the checkpoint; the reason comes up from its log
    ('comsim-policy-eval-checkpoint', 'comsim-policy-eval',
     ['--mode', 'dds', '--checkpoints', 'no_weights', '--tasks', 'stack_blocks',
      '--rollouts', '1', '--regions', 'id', '--out', 'out_eval'],
     ['node(s) exited early: policy (exit 2', 'comsim-policy: error:',
      'config.yaml present but model.safetensors is missing']),
    # in process the checkpoint is checked before any worker starts
    ('comsim-policy-eval-checkpoint-in-process', 'comsim-policy-eval',
     ['--checkpoints', 'no_weights', '--tasks', 'stack_blocks', '--rollouts', '1',
      '--regions', 'id', '--out', 'out_eval'],
     ['no_weights', 'config.yaml present but model.safetensors is missing']),
    ('comsim-policy-eval-key', 'comsim-policy-eval',
     ['--config', 'eval_key.yaml', '--checkpoints', 'ckpt'],
     ['eval_key.yaml', 'unknown key(s) rollout', 'known: mode, tasks, rollouts']),
    ('open_loop-checkpoint', 'open_loop', ['--checkpoint', 'ckpt', '--data', 'episodes'],
     ['ckpt/config.yaml', "train.lr: expected a number, got 'fast'"]),
    ('comsim-launch-argument', 'comsim-launch',
     [str(ROOT / 'launch/record.launch.py'), 'bogus:=1'],
     ['record.launch.py', 'unknown launch argument(s) bogus', 'known: ']),
    ('comsim-launch-file', 'comsim-launch', ['no.launch.py'],
     ['launch file', 'no.launch.py', 'not found']),
    ('comsim-twin-replay-scene', 'comsim-twin-replay',
     ['episodes', '--scene', 'thin_scene.yaml', '--out', 'out_paired'],
     ['thin_scene.yaml', 'objects.box.size: expected a list of numbers', "got 'thin'"]),
    ('comsim-twin-generate-config', 'comsim-twin-generate',
     ['--scene', 'thin_scene.yaml', '--task', 'move_card', '--episodes', '1', '--out', 'o',
      '--config', 'gen.yaml'],
     ['gen.yaml', "image_scale: expected a number, got 'half'"]),
    ('comsim-align-calibration', 'comsim-align',
     ['episodes', '--calibration', 'calib', '--task', 'move_card'],
     ['calib/front.yaml:2:', 'YAML syntax error']),
    ('comsim-calibrate-setup', 'comsim-calibrate',
     ['episodes', '--out', 'out_calib', '--setup', 'none.yaml'],
     ['none.yaml', 'not found']),
    ('comsim-neural-sim-train-lr', 'comsim-neural-sim-train',
     ['--config', 'ns_lr.yaml', '--data', 'synthetic:2', '--out', 'out_ns'],
     ['ns_lr.yaml', "lr: expected a number, got 'fast'"]),
    ('comsim-translate-episodes-input', 'comsim-translate-episodes',
     ['episodes', '--checkpoint', 'ns_ckpt', '--out', 'out_tr'],
     ['no sim episodes (metadata.yaml) under episodes']),
    ('comsim-neural-sim-ablation-checkpoint', 'comsim-neural-sim-ablation',
     ['--checkpoint', 'ns_ckpt', '--paired', 'episodes', '--out', 'out_ab'],
     ['ns_ckpt/neural_sim.yaml', "frames: expected an integer, got 'many'"]),
    ('comsim-bench-lab-ground-truth-lab', 'comsim-bench-lab-ground-truth',
     ['episodes', '--out', 'out_gt', '--lab', 'lab_syntax.yaml'],
     ['lab_syntax.yaml:2:', 'YAML syntax error']),
    ('comsim-calibration-capture-lab', 'comsim-calibration-capture',
     ['--out', 'out_cc', '--lab', 'lab_syntax.yaml'],
     ['lab_syntax.yaml:2:', 'YAML syntax error']),
]


TORCH = {'comsim-policy-eval', 'comsim-neural-sim-translate', 'comsim-policy', 'open_loop',
         'comsim-policy-train', 'comsim-neural-sim-train', 'comsim-translate-episodes',
         'comsim-neural-sim-ablation'}


def _command(script: str) -> list[str]:
    if script == 'open_loop':
        return [sys.executable, '-m', 'comsim_policy.evaluation.open_loop']
    return [str(BIN / script)]


def _run(cwd: Path, script: str, args: list[str]) -> subprocess.CompletedProcess:
    env = {**os.environ, 'COMSIM_ROOT': str(ROOT)}
    env.pop('COMSIM_DEBUG', None)
    try:
        return subprocess.run([*_command(script), *args], cwd=cwd, env=env, capture_output=True,
                              text=True, timeout=PROCESS_TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        def text(out) -> str:
            return out.decode(errors='replace') if isinstance(out, bytes) else out or ''
        return subprocess.CompletedProcess(exc.cmd, 'timeout', text(exc.stdout),
                                           text(exc.stderr) + f'\n[killed after {exc.timeout} s]')


@pytest.fixture(scope='module')
def results(tmp_path_factory):
    d = tmp_path_factory.mktemp('bad_input')
    _files(d)
    # the scripts that import torch (or start a graph) first: they set the wall time
    order = sorted(CASES, key=lambda c: c[1] not in TORCH)
    with ThreadPoolExecutor(max_workers=8) as pool:
        futures = {name: pool.submit(_run, d, script, args) for name, script, args, _ in order}
        futures['debug'] = pool.submit(_run, d, 'comsim-launch', ['no.launch.py', '--debug'])
        return {name: f.result() for name, f in futures.items()}


@pytest.mark.parametrize('name,script,args,want', CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_one_line_and_exit_2(results, name, script, args, want):
    proc = results[name]
    err = proc.stderr.strip()
    assert proc.returncode == 2, (proc.returncode, err[-2000:])
    assert 'Traceback' not in err, err[-2000:]
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) <= 2, err
    prog = 'comsim_policy.evaluation.open_loop' if script == 'open_loop' else script
    line = next((ln for ln in lines if ln.startswith(f'{prog}: error: ')), None)
    assert line is not None, err
    for text in want:
        assert text in line, (text, line)


def test_debug_keeps_the_traceback(results):
    proc = results['debug']
    assert proc.returncode not in (0, 2) and 'Traceback' in proc.stderr, proc.stderr[-2000:]
