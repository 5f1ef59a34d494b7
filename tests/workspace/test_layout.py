"""The workspace installs two ways: what launch files and package manifests name must exist."""
import ast
import importlib
import xml.etree.ElementTree as ET
from importlib.metadata import entry_points
from pathlib import Path

import pytest
import yaml

from comsim_core.errors import UserError
from comsim_core.ros.graph import graph_from_launch, load_launch_module

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ['comsim_bench_lab', 'comsim_core', 'comsim_teleop', 'comsim_twin', 'comsim_neural_sim',
            'comsim_policy', 'comsim_bringup']
LAUNCH_FILES = sorted((ROOT / 'launch').glob('*.launch.py'))


def every_node(module) -> dict[str, str]:
    """Every on/off launch argument on, so the graph has all its nodes."""
    return {k: 'true' for k, (default, _) in getattr(module, 'ARGUMENTS', {}).items()
            if default in ('true', 'false') or default.startswith('$(var')}


def console_scripts():
    return {ep.name: ep for ep in entry_points(group='console_scripts')}


@pytest.mark.parametrize('pkg', PACKAGES)
def test_ament_python_package_is_complete(pkg):
    d = ROOT / 'src' / pkg
    root = ET.parse(d / 'package.xml').getroot()
    assert root.get('format') == '3'
    assert root.findtext('name') == pkg
    assert root.find('export/build_type').text == 'ament_python'
    assert (d / 'resource' / pkg).exists(), 'ament index marker'
    assert (d / pkg / '__init__.py').exists()
    setup = (d / 'setup.py').read_text()
    assert f"PACKAGE = '{pkg}'" in setup
    assert f'install_scripts=$base/lib/{pkg}' in (d / 'setup.cfg').read_text(), \
        'ros2 run looks in lib/<package>'


def test_every_console_script_points_at_a_callable():
    scripts = console_scripts()
    declared = []
    for pkg in PACKAGES:
        tree = ast.parse((ROOT / 'src' / pkg / 'setup.py').read_text())
        for node in ast.walk(tree):
            value = node.value if isinstance(node, ast.Constant) else None
            if isinstance(value, str) and ' = ' in value and ':' in value:
                declared.append(node.value.split(' = ')[0])
    assert declared, 'no console scripts found'
    for name in declared:
        assert name in scripts, f'{name} declared but not installed (run scripts/setup.sh)'
        module, _, attr = scripts[name].value.partition(':')
        assert callable(getattr(importlib.import_module(module), attr)), name


@pytest.mark.parametrize('launch_file', LAUNCH_FILES, ids=lambda p: p.name)
def test_launch_file_names_existing_executables_and_params(launch_file):
    module = load_launch_module(launch_file)
    scripts = console_scripts()
    for spec in graph_from_launch(launch_file, every_node(module)):
        assert spec.executable in scripts, f'{spec.executable} is not an installed executable'
        assert scripts[spec.executable].value.split('.')[0] == spec.package, \
            f'{spec.executable} does not belong to package {spec.package}'
        for params in spec.params:
            assert params.exists(), params
            data = yaml.safe_load(params.read_text())
            assert spec.name in data and 'ros__parameters' in data[spec.name], \
                f'{params} has no "{spec.name}: ros__parameters:" section'


def test_params_files_only_use_parameters_the_nodes_declare():
    """A typo in config/*.yaml would be refused at start-up; catch it here first."""
    nodes = {
        'bench_lab.yaml': ('comsim_bench_lab.node', 'bench_lab'),
        'teleop.yaml': ('comsim_teleop.nodes.teleop_node', 'teleop'),
        'recorder.yaml': ('comsim_teleop.nodes.recorder_node', 'recorder'),
        'episode_runner.yaml': ('comsim_core.ros.episode_runner', 'episode_runner'),
        'twin.yaml': ('comsim_twin.nodes.twin_node', 'twin'),
        'policy.yaml': ('comsim_policy.nodes.policy_node', 'policy'),
    }
    from comsim_core.ros.params import param_spec
    for fname, (module, node) in nodes.items():
        defaults = {k: param_spec(v).default
                    for k, v in importlib.import_module(module).DEFAULTS.items()}
        params = yaml.safe_load((ROOT / 'config' / fname).read_text())[node]['ros__parameters']
        unknown = set(params) - set(defaults) - {'use_sim_time'}
        assert not unknown, f'config/{fname}: unknown {unknown}'
        for key, value in params.items():
            if key in defaults:
                assert type(value) is type(defaults[key]), f'config/{fname}: {key} type'


def test_readme_test_command_is_what_ci_runs():
    readme = (ROOT / 'README.md').read_text()
    ci = (ROOT / '.ci' / 'run').read_text()
    assert 'scripts/test.sh' in ci
    assert 'scripts/test.sh' in readme and 'scripts/main_job.sh' in readme


def test_test_files_have_unique_basenames():
    """pytest imports test files by basename (no __init__.py): a repeated name breaks collection."""
    names = [p.name for p in (ROOT / 'tests').rglob('test_*.py')]
    assert sorted({n for n in names if names.count(n) > 1}) == []


@pytest.mark.parametrize('launch_file', LAUNCH_FILES, ids=lambda p: p.name)
def test_launch_arguments_have_descriptions_and_set_sim_time_on_every_node(launch_file):
    from comsim_core.ros.graph import declared_arguments
    declared = declared_arguments(load_launch_module(launch_file), launch_file)
    assert 'use_sim_time' in declared
    assert all(len(desc) > 10 for _, desc in declared.values())
    for value in ('true', 'false'):
        specs = graph_from_launch(launch_file, {'use_sim_time': value})
        assert specs and {s.overrides['use_sim_time'] for s in specs} == {value}
    for params in {p for s in graph_from_launch(launch_file) for p in s.params}:
        text = params.read_text()
        assert 'use_sim_time' not in text, f'{params} sets use_sim_time: the launch file does'


def test_sim_time_follows_the_bench_lab_unless_given():
    record = Path(__file__).resolve().parents[2] / 'launch' / 'record.launch.py'
    real_arm = graph_from_launch(record, {'bench_lab': 'false'})
    assert [s.name for s in real_arm] == ['teleop', 'recorder']
    assert {s.overrides['use_sim_time'] for s in real_arm} == {'false'}
    assert {s.overrides['use_sim_time'] for s in graph_from_launch(record)} == {'true'}
    forced = graph_from_launch(record, {'bench_lab': 'false', 'use_sim_time': 'true'},
                               {'teleop': {'use_sim_time': 'false'}})
    assert {s.name: s.overrides['use_sim_time'] for s in forced} == {'teleop': 'false',
                                                                    'recorder': 'true'}
    with pytest.raises(UserError, match='unknown launch argument.*sim_time'):
        graph_from_launch(record, {'sim_time': 'true'})
