"""The workspace as a ROS lab builds it: colcon (from PyPI, in a venv of its own, as CI has no
ROS) builds every package under src/, with and without --symlink-install; the ament index lists
them, share/comsim_bringup holds the launch files and configs, `ros2 run`'s executables are in
lib/<package>/, and launch files and nodes read the installed configs."""
from __future__ import annotations

import os
import subprocess
import sys
import venv
from importlib.metadata import distribution
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = sorted(p.name for p in (ROOT / 'src').iterdir() if (p / 'package.xml').exists())
COLCON = ['colcon-common-extensions', 'ros-ament-package']


@pytest.fixture(scope='module')
def colcon(tmp_path_factory) -> Path:
    """colcon in a venv of its own (about 12 s from the package index, once per run)."""
    env_dir = tmp_path_factory.mktemp('colcon-venv')
    venv.create(env_dir, with_pip=True)
    pip = subprocess.run([str(env_dir / 'bin' / 'python'), '-m', 'pip', 'install', '-q',
                          '--disable-pip-version-check', *COLCON],
                         capture_output=True, text=True, timeout=600)
    if pip.returncode:
        lines = (pip.stderr or pip.stdout).strip().splitlines() or ['no output']
        pytest.skip(f'colcon could not be installed from the package index: {lines[-1]}')
    return env_dir / 'bin' / 'colcon'


def build(colcon: Path, where: Path, *options: str) -> Path:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(('AMENT_', 'COLCON_', 'COMSIM_', 'PYTHONPATH'))}
    done = subprocess.run(
        [str(colcon), 'build', '--base-paths', str(ROOT / 'src'), '--build-base',
         str(where / 'build'), '--install-base', str(where / 'install'), *options],
        cwd=where, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return where / 'install'


@pytest.fixture(scope='module')
def copied(colcon, tmp_path_factory) -> Path:
    """A plain `colcon build` (files copied into install/), shared by the tests below."""
    return build(colcon, tmp_path_factory.mktemp('ws'))


def console_scripts(pkg: str) -> list[str]:
    return [ep.name for ep in distribution(pkg).entry_points if ep.group == 'console_scripts']


@pytest.mark.parametrize('symlink', [False, True], ids=['copy', 'symlink'])
def test_colcon_installs_packages_share_files_and_executables(colcon, copied, tmp_path,
                                                              monkeypatch, symlink):
    install = build(colcon, tmp_path, '--symlink-install') if symlink else copied
    prefixes = [install / pkg for pkg in PACKAGES]
    monkeypatch.setenv('AMENT_PREFIX_PATH', os.pathsep.join(map(str, prefixes)))
    monkeypatch.delenv('COMSIM_ROOT', raising=False)
    from ament_index_python.packages import get_package_share_directory, get_packages_with_prefixes

    index = get_packages_with_prefixes()
    assert {p: index.get(p) for p in PACKAGES} == {p: str(install / p) for p in PACKAGES}
    share = Path(get_package_share_directory('comsim_bringup'))
    assert share == install / 'comsim_bringup' / 'share' / 'comsim_bringup'
    shipped = sorted(p.relative_to(ROOT) for p in [*(ROOT / 'config').rglob('*.yaml'),
                                                   *(ROOT / 'launch').glob('*.launch.py')])
    assert 'config/bench_lab/lab.yaml' in map(str, shipped)     # the bench lab reads it there
    for rel in shipped:
        assert (share / rel).read_bytes() == (ROOT / rel).read_bytes(), rel
    assert (share / 'launch' / 'record.launch.py').is_file()
    # ros2 run PACKAGE EXECUTABLE runs lib/PACKAGE/EXECUTABLE.
    for pkg in PACKAGES:
        for name in console_scripts(pkg):
            exe = install / pkg / 'lib' / pkg / name
            assert exe.is_file() and os.access(exe, os.X_OK), exe

    # Launch files and nodes read the installed share, whatever the current folder.
    from comsim_core import paths
    from comsim_core.ros.graph import find_executable, graph_from_launch

    monkeypatch.chdir(tmp_path)
    assert paths.share_root() == share and paths.config_dir() == share / 'config'
    assert paths.resolve_config_path('config/bench_lab/lab.yaml').read_bytes() == \
        (ROOT / 'config/bench_lab/lab.yaml').read_bytes()
    specs = graph_from_launch('record.launch.py', {'unattended': 'true'})
    assert {p.parent for s in specs for p in s.params} == {share / 'config'}
    assert find_executable('comsim-teleop', 'comsim_teleop') == \
        str(install / 'comsim_teleop' / 'lib' / 'comsim_teleop' / 'comsim-teleop')


def test_an_installed_executable_runs_on_the_installed_packages(copied, tmp_path):
    """What `source install/setup.bash && ros2 run comsim_core comsim-launch ...` does, with
    this Python (it has rclpy; colcon's venv has not): the installed comsim-launch finds the
    installed launch file by name and lists its arguments."""
    install = copied
    site = f'lib/python{sys.version_info.major}.{sys.version_info.minor}/site-packages'
    env = {k: v for k, v in os.environ.items() if not k.startswith(('AMENT_', 'COMSIM_'))}
    env['AMENT_PREFIX_PATH'] = os.pathsep.join(str(install / p) for p in PACKAGES)
    env['PYTHONPATH'] = os.pathsep.join(str(install / p / site) for p in PACKAGES)
    probe = subprocess.run(
        [sys.executable, str(install / 'comsim_core/lib/comsim_core/comsim-launch'),
         'record.launch.py', '--show-args'], cwd=tmp_path, env=env, capture_output=True,
        text=True, timeout=120)
    assert probe.returncode == 0, probe.stderr
    assert "'robot_description':" in probe.stdout and "'namespace':" in probe.stdout
    where = subprocess.run(
        [sys.executable, '-c', 'import comsim_bringup, comsim_core; '
         'print(comsim_core.__file__); print(comsim_bringup.share_directory())'],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert where.returncode == 0, where.stderr
    module, share = where.stdout.split()
    assert Path(module).is_relative_to(install / 'comsim_core')
    assert Path(share) == install / 'comsim_bringup' / 'share' / 'comsim_bringup'
