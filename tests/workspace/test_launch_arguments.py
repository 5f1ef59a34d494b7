"""Launch arguments as `ros2 launch` applies them, through comsim-launch and through the
launch_ros form: namespace, params_file, checkpoint, robot_description; bad values are one line
and exit code 2; the nodes started by comsim-launch really get them."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import types
from pathlib import Path

import pytest
import yaml

from comsim_core.errors import UserError
from comsim_core.robot.model import DEFAULT_ARM_PATH
from comsim_core.ros.graph import graph_from_launch, load_launch_module
from comsim_core.ros.params import ParamsFile

ROOT = Path(__file__).resolve().parents[2]
LAUNCH = ROOT / 'launch'
RECORD, DEPLOY = LAUNCH / 'record.launch.py', LAUNCH / 'deploy.launch.py'


def arguments(path: Path) -> dict:
    return load_launch_module(path).ARGUMENTS


@pytest.mark.parametrize('launch_file', sorted(LAUNCH.glob('*.launch.py')), ids=lambda p: p.name)
def test_every_launch_file_takes_namespace_and_params_file(launch_file):
    declared = arguments(launch_file)
    assert {'use_sim_time', 'namespace', 'params_file'} <= set(declared)
    assert declared['namespace'][0] == declared['params_file'][0] == ''


def test_robot_description_and_checkpoint_where_a_node_takes_them():
    assert 'robot_description' in arguments(RECORD) and 'robot_description' in arguments(DEPLOY)
    assert 'checkpoint' in arguments(DEPLOY) and 'checkpoint' not in arguments(RECORD)
    arm = str(DEFAULT_ARM_PATH)
    specs = {s.name: s for s in graph_from_launch(DEPLOY, {'checkpoint': str(ROOT / 'config'),
                                                           'robot_description': arm})}
    assert specs['policy'].overrides['checkpoint'] == str(ROOT / 'config')
    assert specs['policy'].overrides['robot_model'] == arm
    assert 'robot_model' not in specs['bench_lab'].overrides
    # Empty: the params file decides; --set wins over the argument.
    plain = {s.name: s for s in graph_from_launch(DEPLOY)}
    assert not {'checkpoint', 'robot_model'} & set(plain['policy'].overrides)
    forced = graph_from_launch(RECORD, {'robot_description': arm},
                               {'teleop': {'robot_model': '/x.urdf'}})
    assert {s.name: s.overrides.get('robot_model') for s in forced} == \
        {'bench_lab': None, 'teleop': '/x.urdf', 'recorder': None}


def test_namespace_puts_every_node_under_it_with_its_parameters(tmp_path):
    specs = graph_from_launch(RECORD, {'namespace': 'lab/arm1', 'unattended': 'true'})
    assert {s.namespace for s in specs} == {'/lab/arm1'}
    for spec in specs:
        assert ['-r', '__ns:=/lab/arm1'] == spec.ros_args()[3:5]
        [params] = spec.params
        original = ParamsFile(str(ROOT / 'config' / f'{spec.name}.yaml'))
        # rcl applies `name:` only outside a namespace: the section is re-keyed, values equal.
        assert ParamsFile(str(params)).section_for(f'/lab/arm1/{spec.name}') == \
            original.section_for(f'/{spec.name}')
        assert str(ROOT / 'config' / f'{spec.name}.yaml') in params.read_text().splitlines()[0]
    assert {s.namespace for s in graph_from_launch(RECORD, {'namespace': '/'})} == {''}


@pytest.mark.parametrize('bad', ['1arm', 'arm-1', 'a//b', 'arm 1'])
def test_a_bad_namespace_is_refused(bad):
    with pytest.raises(UserError, match='namespace:=.*letters, digits and _'):
        graph_from_launch(RECORD, {'namespace': bad})


def test_params_file_is_read_after_the_shipped_one_by_the_nodes_it_names(tmp_path):
    mine = tmp_path / 'mine.yaml'
    mine.write_text('recorder:\n  ros__parameters:\n    operator: alice\n')
    specs = {s.name: s for s in graph_from_launch(RECORD, {'params_file': str(mine)})}
    assert specs['recorder'].params == [ROOT / 'config' / 'recorder.yaml', mine]
    assert specs['teleop'].params == [ROOT / 'config' / 'teleop.yaml']
    # Namespaced, the user's file is re-keyed too and still comes last.
    ns = {s.name: s for s in graph_from_launch(RECORD, {'params_file': str(mine),
                                                        'namespace': 'arm1'})}
    assert ParamsFile(str(ns['recorder'].params[-1])).section_for('/arm1/recorder') == \
        {'operator': 'alice'}


def test_bad_paths_are_one_line(tmp_path):
    other = tmp_path / 'other.yaml'
    other.write_text('planner:\n  ros__parameters:\n    x: 1\n')
    with pytest.raises(UserError, match=r"params_file .*other.yaml: no section for any node of "
                                        r"this graph \(bench_lab, recorder, teleop\); sections "
                                        r"found: '/planner'"):
        graph_from_launch(RECORD, {'params_file': str(other)})
    with pytest.raises(UserError, match=r'robot_description:=nope.urdf: .*nope.urdf does not '
                                        r'exist'):
        graph_from_launch(RECORD, {'robot_description': 'nope.urdf'})
    with pytest.raises(UserError, match='params_file:=missing.yaml: .*does not exist'):
        graph_from_launch(RECORD, {'params_file': 'missing.yaml'})
    broken = tmp_path / 'broken.yaml'
    broken.write_text('recorder: [\n')
    with pytest.raises(UserError, match='broken.yaml:2:1: YAML syntax error'):
        graph_from_launch(RECORD, {'params_file': str(broken)})


def run_launch(*args, timeout=60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, '-m', 'comsim_core.ros.graph', *args],
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT)


def test_comsim_launch_lists_the_arguments_and_refuses_bad_ones_in_one_line(tmp_path):
    shown = run_launch('deploy.launch.py', '--show-args')     # a shipped launch file by name
    assert shown.returncode == 0, shown.stderr
    for name in ('bench_lab', 'use_sim_time', 'namespace', 'params_file', 'checkpoint',
                 'robot_description'):
        assert f"'{name}':" in shown.stdout
    assert "(default: LaunchConfig('bench_lab'))" in shown.stdout
    bad = run_launch('record.launch.py', 'namespace:=9lives')
    assert bad.returncode == 2 and 'Traceback' not in bad.stderr
    assert bad.stderr.strip().splitlines()[-1].count('namespace:=9lives') == 1
    missing = run_launch('deploy.launch.py', f'checkpoint:={tmp_path}/none')
    assert missing.returncode == 2 and 'none does not exist' in missing.stderr


class _Recorded:
    """Stands in for a launch / launch_ros class: keeps what it was given."""

    def __init__(self, *args, **kwargs):
        self.args, self.kwargs = args, kwargs


class _LaunchConfiguration(_Recorded):
    def perform(self, context):
        return context[self.args[0]]


def test_the_ros2_launch_form_starts_the_same_nodes(monkeypatch, tmp_path):
    """`ros2 launch` cannot run here: fake launch/launch_ros modules record what the launch
    description asks for, and its nodes must be comsim-launch's, namespace and files included."""
    fakes = {'launch': {'LaunchDescription': lambda actions: actions},
             'launch.actions': {'DeclareLaunchArgument': _Recorded, 'OpaqueFunction': _Recorded},
             'launch.substitutions': {'LaunchConfiguration': _LaunchConfiguration},
             'launch_ros': {}, 'launch_ros.actions': {'Node': _Recorded}}
    for name, attrs in fakes.items():
        module = types.ModuleType(name)
        module.__dict__.update(attrs)
        monkeypatch.setitem(sys.modules, name, module)
    mine = tmp_path / 'mine.yaml'
    mine.write_text('teleop:\n  ros__parameters:\n    rate_hz: 25.0\n')
    given = {'bench_lab': 'false', 'namespace': 'arm1', 'params_file': str(mine),
             'robot_description': str(DEFAULT_ARM_PATH)}
    module = load_launch_module(RECORD)
    actions = module.generate_launch_description()
    declared = {a.args[0]: a.kwargs for a in actions if 'default_value' in a.kwargs}
    assert list(declared) == list(module.ARGUMENTS)
    assert all(d['description'] == module.ARGUMENTS[n][1] for n, d in declared.items())
    # What ros2 launch does: every argument given or defaulted, then the opaque function runs.
    context = {n: given.get(n, d['default_value']) for n, d in declared.items()}
    context = {n: v.perform(context) if isinstance(v, _LaunchConfiguration) else v
               for n, v in context.items()}
    [opaque] = [a for a in actions if 'function' in a.kwargs]
    nodes = {n.kwargs['name']: n.kwargs for n in opaque.kwargs['function'](context)}
    specs = {s.name: s for s in graph_from_launch(RECORD, given)}
    assert nodes.keys() == specs.keys() == {'teleop', 'recorder'}
    for name, spec in specs.items():
        assert nodes[name]['namespace'] == '/arm1'
        assert nodes[name]['executable'] == spec.executable
        assert nodes[name]['parameters'] == [*map(str, spec.params), spec.overrides]
    assert nodes['teleop']['parameters'][-1] == {'use_sim_time': 'false',
                                                 'robot_model': str(DEFAULT_ARM_PATH)}


# -- real nodes ------------------------------------------------------------------------------
def get_parameters(node, spin_until, fqn: str, names: list[str]) -> dict:
    from rcl_interfaces.srv import GetParameters
    from rclpy.parameter import parameter_value_to_python

    client = node.create_client(GetParameters, f'{fqn}/get_parameters')
    assert client.wait_for_service(timeout_sec=90), fqn
    future = client.call_async(GetParameters.Request(names=names))
    assert spin_until(node, future.done, 30)
    return dict(zip(names, map(parameter_value_to_python, future.result().values)))


@pytest.mark.ros
def test_comsim_launch_applies_namespace_params_file_and_robot_description(
        tmp_path, ros_node, spin_until):
    mine = tmp_path / 'mine.yaml'
    mine.write_text(yaml.safe_dump({'recorder': {'ros__parameters': {
        'output_dir': str(tmp_path / 'episodes'), 'operator': 'alice'}}}))
    proc = subprocess.Popen(
        [sys.executable, '-m', 'comsim_core.ros.graph', 'record.launch.py', 'bench_lab:=false',
         'namespace:=arm1', f'params_file:={mine}', f'robot_description:={DEFAULT_ARM_PATH}',
         '--log-dir', str(tmp_path / 'logs')],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=tmp_path,
        env={**os.environ, 'COMSIM_DEBUG': '1'})
    try:
        assert 'started teleop, recorder' in proc.stdout.readline()
        recorder = get_parameters(ros_node, spin_until, '/arm1/recorder',
                                  ['output_dir', 'operator', 'storage', 'use_sim_time'])
        assert recorder == {'output_dir': str(tmp_path / 'episodes'), 'operator': 'alice',
                            'storage': 'mcap', 'use_sim_time': False}
        teleop = get_parameters(ros_node, spin_until, '/arm1/teleop', ['robot_model', 'source'])
        assert teleop == {'robot_model': str(DEFAULT_ARM_PATH), 'source': 'scripted'}
        assert ('recorder', '/arm1') in ros_node.get_node_names_and_namespaces()
        assert proc.poll() is None
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, out


@pytest.mark.ros
def test_the_checkpoint_argument_reaches_the_policy_node(tmp_path):
    """An empty folder is no checkpoint: the policy node, started with it, says so and stops;
    comsim-launch passes its one line on with exit code 2."""
    (tmp_path / 'empty_ckpt').mkdir()
    done = run_launch('deploy.launch.py', 'bench_lab:=false', f'checkpoint:={tmp_path}/empty_ckpt',
                      '--log-dir', str(tmp_path / 'logs'), timeout=180)
    assert done.returncode == 2, done.stdout + done.stderr
    assert 'policy (exit 2' in done.stderr and 'empty_ckpt' in done.stderr


def test_the_readme_shows_every_argument_and_real_ros2_run_commands():
    import re
    from importlib.metadata import distribution

    readme = (ROOT / 'README.md').read_text()
    assert 'ros2 launch comsim_bringup record.launch.py' in readme
    declared = {n for p in LAUNCH.glob('*.launch.py') for n in arguments(p)}
    assert {n for n in declared if f'| `{n}` |' not in readme} == set()
    runs = re.findall(r'ros2 run (comsim_\w+) ([\w-]+)', readme)
    assert runs
    for package, tool in runs:
        scripts = {ep.name for ep in distribution(package).entry_points
                   if ep.group == 'console_scripts'}
        assert tool in scripts, f'README: ros2 run {package} {tool}: not a tool of {package}'
