"""Launch arguments as `ros2 launch` applies them, through comsim-launch and through the
launch_ros form: namespace, params_file, remappings, checkpoint, robot_description (also
robot_state_publisher's URDF, a node started only where it is installed); bad values are one
line and exit code 2; the nodes started by comsim-launch really get them."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import types
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml

from comsim_core.errors import UserError
from comsim_core.robot.model import DEFAULT_ARM_PATH
from comsim_core.robot.urdf import DEFAULT_URDF_PATH, mjcf_to_urdf
from comsim_core.ros import graph as graph_module
from comsim_core.ros.graph import graph_from_launch, load_launch_module
from comsim_core.ros.params import ParamsFile

ROOT = Path(__file__).resolve().parents[2]
LAUNCH = ROOT / 'launch'
RECORD, DEPLOY = LAUNCH / 'record.launch.py', LAUNCH / 'deploy.launch.py'


def arguments(path: Path) -> dict:
    return load_launch_module(path).ARGUMENTS


@contextmanager
def launched(args: list[str], **popen):
    """comsim-launch with `args` as a child process (output on its stdout). If a failed test
    leaves it running it is stopped with SIGTERM first, so it stops its nodes (they run in
    sessions of their own and would outlive a SIGKILL), and killed only if that hangs."""
    proc = subprocess.Popen([sys.executable, '-m', 'comsim_core.ros.graph', *args],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **popen)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()


def interrupt(proc) -> str:
    """Stop comsim-launch as Ctrl-C does; its output, once it has exited 0."""
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out
    return out


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
                                        r"this graph \(bench_lab, recorder, robot_state_publisher, "
                                        r"teleop\); sections found: '/planner'"):
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
             'launch.actions': {'DeclareLaunchArgument': _Recorded, 'OpaqueFunction': _Recorded,
                                'LogInfo': _Recorded},
             'launch.substitutions': {'LaunchConfiguration': _LaunchConfiguration},
             'launch_ros': {}, 'launch_ros.actions': {'Node': _Recorded}}
    for name, attrs in fakes.items():
        module = types.ModuleType(name)
        module.__dict__.update(attrs)
        monkeypatch.setitem(sys.modules, name, module)
    mine = tmp_path / 'mine.yaml'
    mine.write_text('teleop:\n  ros__parameters:\n    rate_hz: 25.0\n')
    given = {'bench_lab': 'false', 'namespace': 'arm1', 'params_file': str(mine),
             'robot_description': str(DEFAULT_ARM_PATH),
             'remappings': 'joint_states:=/driver/joint_states'}
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
    actions = opaque.kwargs['function'](context)
    nodes = {n.kwargs['name']: n.kwargs for n in actions if 'name' in n.kwargs}
    specs = {s.name: s for s in graph_from_launch(RECORD, given)}
    assert nodes.keys() == specs.keys() == {'teleop', 'recorder'}
    for name, spec in specs.items():
        assert nodes[name]['namespace'] == '/arm1'
        assert nodes[name]['executable'] == spec.executable
        assert nodes[name]['parameters'][:-1] == list(map(str, spec.params))
        assert nodes[name]['remappings'] == [('joint_states', '/driver/joint_states')]
    # Typed as `-p` types them: launch_ros keeps a str a string, and use_sim_time is a bool.
    assert nodes['teleop']['parameters'][-1] == {'use_sim_time': False,
                                                 'robot_model': str(DEFAULT_ARM_PATH)}
    # robot_state_publisher is not installed here: one line says so instead of a node.
    [skipped] = [a.kwargs['msg'] for a in actions if 'msg' in a.kwargs]
    assert skipped.startswith('robot_state_publisher not started: ') and 'not installed' in skipped


# -- robot_state_publisher --------------------------------------------------------------------
def with_fake_robot_state_publisher(monkeypatch, path='/opt/ros/x/lib/robot_state_publisher/'
                                                      'robot_state_publisher'):
    real = graph_module.find_executable
    monkeypatch.setattr(graph_module, 'find_executable', lambda name, package=None: (
        path if name == 'robot_state_publisher' else real(name, package)))


def robot_description_of(spec) -> str:
    fqn = f'{spec.namespace}/{spec.name}'
    [section] = [ParamsFile(str(p)).section_for(fqn) for p in spec.params]
    assert set(section) == {'robot_description'}
    return section['robot_description']


@pytest.mark.parametrize('launch_file', [RECORD, DEPLOY], ids=lambda p: p.name)
def test_robot_state_publisher_gets_the_urdf_where_it_is_installed(monkeypatch, launch_file):
    with_fake_robot_state_publisher(monkeypatch)
    specs = {s.name: s for s in graph_from_launch(launch_file, {'bench_lab': 'false'})}
    rsp = specs['robot_state_publisher']
    assert (rsp.package, rsp.executable) == ('robot_state_publisher', 'robot_state_publisher')
    assert robot_description_of(rsp) == Path(DEFAULT_URDF_PATH).read_text()   # the ComSim arm
    assert rsp.overrides == {'use_sim_time': 'false'}
    # Your arm's MJCF: its URDF, generated; in a namespace, keyed by the namespaced name.
    mine = {s.name: s for s in graph_from_launch(launch_file, {
        'robot_description': str(DEFAULT_ARM_PATH), 'namespace': 'arm1'})}
    assert mine['robot_state_publisher'].namespace == '/arm1'
    assert robot_description_of(mine['robot_state_publisher']) == mjcf_to_urdf(DEFAULT_ARM_PATH)
    assert mine['robot_state_publisher'].overrides == {'use_sim_time': 'true'}


def test_robot_state_publisher_is_left_out_where_it_is_not_installed(monkeypatch):
    monkeypatch.setenv('PATH', '/nonexistent')
    graph = graph_from_launch(RECORD, {'bench_lab': 'false'})
    assert [s.name for s in graph] == ['teleop', 'recorder']
    assert 'not installed' in graph.skipped['robot_state_publisher']
    # --set for it is no error: the graph would have it on a ROS install.
    graph_from_launch(RECORD, {}, {'robot_state_publisher': {'publish_frequency': '10.0'}})


def test_comsim_launch_starts_an_installed_robot_state_publisher_with_the_urdf(tmp_path):
    """A stand-in robot_state_publisher on PATH records the command line comsim-launch gives it
    (a launch file of that one node: no DDS needed)."""
    argv_file = tmp_path / 'argv.json'
    bin_dir = tmp_path / 'bin'
    bin_dir.mkdir()
    fake = bin_dir / 'robot_state_publisher'
    # SIGINT handled explicitly: a suite started from a background job inherits it ignored.
    fake.write_text(f'#!{sys.executable}\nimport json, signal, sys, time\n'
                    'signal.signal(signal.SIGINT, lambda *_: sys.exit(0))\n'
                    f'open({str(argv_file)!r}, "w").write(json.dumps(sys.argv))\n'
                    'time.sleep(120)\n')
    fake.chmod(0o755)
    launch = tmp_path / 'rsp.launch.py'
    record = load_launch_module(RECORD)
    launch.write_text(
        'from pathlib import Path\n'
        f'from comsim_core.ros.graph import COMMON_ARGUMENTS\nCONFIG = Path({str(tmp_path)!r})\n'
        f'NODES = [{[n for n in record.NODES if n["name"] == "robot_state_publisher"][0]!r}]\n'
        "ARGUMENTS = {'use_sim_time': ('false', 'clock'), **COMMON_ARGUMENTS, "
        "'robot_description': ('', 'arm')}\n")
    with launched([str(launch), 'namespace:=arm1',
                   'remappings:=joint_states:=/driver/joint_states'], cwd=tmp_path,
                  env={**os.environ, 'PATH': f'{bin_dir}{os.pathsep}{os.environ["PATH"]}'}
                  ) as proc:
        assert 'started robot_state_publisher' in proc.stdout.readline()
        for _ in range(300):
            if argv_file.exists() and argv_file.read_text():
                break
            proc.poll() is None or pytest.fail(proc.stdout.read())
            time.sleep(0.1)
        argv = json.loads(argv_file.read_text())
        interrupt(proc)
    assert argv[1:8] == ['--ros-args', '-r', '__node:=robot_state_publisher', '-r',
                         '__ns:=/arm1', '-r', 'joint_states:=/driver/joint_states']
    [params] = [argv[i + 1] for i, a in enumerate(argv) if a == '--params-file']
    section = ParamsFile(params).section_for('/arm1/robot_state_publisher')
    assert section == {'robot_description': Path(DEFAULT_URDF_PATH).read_text()}
    assert argv[-2:] == ['-p', 'use_sim_time:=false']


# -- remappings -------------------------------------------------------------------------------
def test_remappings_apply_to_every_node_or_to_the_one_named():
    specs = {s.name: s for s in graph_from_launch(RECORD, {
        'remappings': 'joint_states:=/arm1/joint_states,  teleop:joy:=/pad/joy'})}
    assert specs['teleop'].remappings == [('joint_states', '/arm1/joint_states'),
                                          ('joy', '/pad/joy')]
    assert specs['recorder'].remappings == [('joint_states', '/arm1/joint_states')]
    assert ['-r', 'joy:=/pad/joy'] == specs['teleop'].ros_args()[5:7]
    assert all(s.remappings == [] for s in graph_from_launch(RECORD))


@pytest.mark.parametrize('bad', ['joint_states=/x', 'joint_states:=', ':=/x', 'a b:=c',
                                 'js:=/x//y', 'planner:js:=/x', ':js:=/x'])
def test_bad_remappings_are_one_line(bad):
    with pytest.raises(UserError, match='launch argument remappings: ') as err:
        graph_from_launch(RECORD, {'remappings': bad})
    assert '\n' not in str(err.value)


def test_policy_and_teleop_topics_are_relative_so_namespace_and_remaps_apply():
    for name in ('teleop', 'policy', 'bench_lab'):
        section = ParamsFile(str(ROOT / 'config' / f'{name}.yaml')).section_for(f'/{name}')
        topics = {k: v for k, v in section.items()
                  if k.endswith('_topic') and k != 'camera_topic_prefix'}
        assert topics and not [v for v in topics.values() if v.startswith('/')], (name, topics)


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
    with launched(['record.launch.py', 'bench_lab:=false', 'namespace:=arm1',
                   f'params_file:={mine}', f'robot_description:={DEFAULT_ARM_PATH}',
                   'remappings:=joint_states:=/driver/joint_states',
                   '--log-dir', str(tmp_path / 'logs')],
                  cwd=tmp_path, env={**os.environ, 'COMSIM_DEBUG': '1'}) as proc:
        assert 'started teleop, recorder' in proc.stdout.readline()
        # robot_state_publisher is not on PyPI: left out, with one line saying so.
        assert proc.stdout.readline().startswith('robot_state_publisher not started: ')
        recorder = get_parameters(ros_node, spin_until, '/arm1/recorder',
                                  ['output_dir', 'operator', 'storage', 'use_sim_time'])
        assert recorder == {'output_dir': str(tmp_path / 'episodes'), 'operator': 'alice',
                            'storage': 'mcap', 'use_sim_time': False}
        teleop = get_parameters(ros_node, spin_until, '/arm1/teleop', ['robot_model', 'source'])
        assert teleop == {'robot_model': str(DEFAULT_ARM_PATH), 'source': 'scripted'}
        # The node list is the graph cache: the recorder answered, but may be listed later.
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and \
                ('recorder', '/arm1') not in ros_node.get_node_names_and_namespaces():
            time.sleep(0.2)
        assert ('recorder', '/arm1') in ros_node.get_node_names_and_namespaces()
        # The teleop's topics are relative: under /arm1, and remapped where a rule says so.
        deadline = time.monotonic() + 30
        command = '/arm1/joint_trajectory_controller/joint_trajectory'
        while time.monotonic() < deadline and not (
                ros_node.count_subscribers('/driver/joint_states')
                and ros_node.count_publishers(command)):
            time.sleep(0.2)
        assert ros_node.count_subscribers('/driver/joint_states') == 1        # the teleop
        assert ros_node.count_subscribers('/arm1/joint_states') == 0
        assert ros_node.count_publishers(command) == 1
        assert proc.poll() is None
        interrupt(proc)


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
