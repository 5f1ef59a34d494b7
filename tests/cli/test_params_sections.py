"""Which params-file sections apply to a node: rcl's names and wildcards, read with safe_load."""
from __future__ import annotations

import pytest

from comsim_core.errors import UserError
from comsim_core.ros.params import ParamsFile, params_file_paths


@pytest.mark.parametrize('pattern,fqn,match', [
    ('recorder', '/recorder', True),
    ('/recorder', '/recorder', True),
    ('recorder', '/ns/recorder', False),
    ('/ns/recorder', '/ns/recorder', True),
    ('/**', '/recorder', True),
    ('/**', '/a/b/recorder', True),
    ('/**/recorder', '/recorder', True),
    ('/**/recorder', '/a/b/recorder', True),
    ('/*/recorder', '/ns/recorder', True),
    ('/*/recorder', '/recorder', False),
    ('/*', '/recorder', True),
    ('recordr', '/recorder', False),
])
def test_section_names_match_like_rcl(tmp_path, pattern, fqn, match):
    f = tmp_path / 'p.yaml'
    f.write_text(f"'{pattern}':\n  ros__parameters:\n    a: 1\n")
    assert (ParamsFile(str(f)).section_for(fqn) is not None) is match


def test_nested_namespaces_and_merged_sections(tmp_path):
    f = tmp_path / 'p.yaml'
    f.write_text('ns:\n  rec:\n    ros__parameters:\n      a: 1\n      qos: {depth: 3}\n'
                 '/**:\n  ros__parameters:\n    b: 2\n')
    pf = ParamsFile(str(f))
    assert sorted(pf.sections) == ['/**', '/ns/rec']
    assert pf.section_for('/ns/rec') == {'b': 2, 'a': 1, 'qos.depth': 3}
    assert pf.section_for('/rec') == {'b': 2}


def test_params_files_are_taken_from_ros_args_only():
    argv = ['prog', '--params-file', 'not_ros.yaml', '--ros-args', '--params-file', 'a.yaml',
            '-p', 'x:=1', '--', '--params-file', 'b.yaml', '--ros-args', '--params-file', 'c.yaml']
    assert params_file_paths(argv) == ['a.yaml', 'c.yaml']
    with pytest.raises(UserError, match='needs a file name'):
        params_file_paths(['prog', '--ros-args', '--params-file'])


def test_not_a_mapping_is_named(tmp_path):
    f = tmp_path / 'p.yaml'
    f.write_text('- a\n- b\n')
    with pytest.raises(UserError, match=r'p.yaml: a params file maps node names'):
        ParamsFile(str(f))


@pytest.mark.parametrize('launch', ['record', 'deploy', 'translate', 'twin'])
def test_every_shipped_params_file_has_its_nodes_section(launch):
    from comsim_core.paths import repo_root
    from comsim_core.ros.graph import graph_from_launch, load_launch_module

    path = repo_root() / 'launch' / f'{launch}.launch.py'
    every_node = {k: 'true' for k, (d, _) in load_launch_module(path).ARGUMENTS.items()
                  if d in ('true', 'false') or d.startswith('$(var')}
    for spec in graph_from_launch(path, every_node):
        for params in spec.params:
            assert ParamsFile(str(params)).section_for(f'/{spec.name}') is not None, params
