"""Where launch files and configs come from: COMSIM_ROOT, a ROS install's share/comsim_bringup
(through the ament index), the checkout; nodes, launch files and comsim_bringup agree."""
from __future__ import annotations

from pathlib import Path

import pytest

from comsim_core import paths
from comsim_core.errors import UserError

ROOT = Path(__file__).resolve().parents[2]


def fake_ros_install(prefix: Path) -> Path:
    """An install prefix as colcon lays out comsim_bringup: index marker, share/launch, config."""
    (prefix / 'share/ament_index/resource_index/packages').mkdir(parents=True)
    (prefix / 'share/ament_index/resource_index/packages/comsim_bringup').write_text('')
    share = prefix / 'share' / 'comsim_bringup'
    (share / 'config').mkdir(parents=True)
    (share / 'launch').mkdir()
    (share / 'config' / 'only_installed.yaml').write_text('a: 1\n')
    (share / 'launch' / 'record.launch.py').write_text('')
    return share


@pytest.fixture
def no_root(monkeypatch):
    monkeypatch.delenv('COMSIM_ROOT', raising=False)
    monkeypatch.delenv('AMENT_PREFIX_PATH', raising=False)


def test_the_checkout_without_a_ros_install(no_root):
    import comsim_bringup

    assert paths.share_root() == ROOT == comsim_bringup.share_directory()
    assert paths.config_dir() == ROOT / 'config'
    assert paths.launch_file('record.launch.py') == ROOT / 'launch' / 'record.launch.py'
    assert paths.resolve_config_path('config/teleop.yaml') == ROOT / 'config' / 'teleop.yaml'


def test_a_ros_install_is_found_through_the_ament_index(no_root, tmp_path, monkeypatch):
    import comsim_bringup

    share = fake_ros_install(tmp_path / 'install' / 'comsim_bringup')
    monkeypatch.setenv('AMENT_PREFIX_PATH', str(tmp_path / 'install' / 'comsim_bringup'))
    assert paths.share_root() == share == comsim_bringup.share_directory()
    assert paths.resolve_config_path('config/only_installed.yaml') == \
        share / 'config' / 'only_installed.yaml'
    assert paths.launch_file('record.launch.py') == share / 'launch' / 'record.launch.py'
    with pytest.raises(UserError, match=r"'deploy.launch.py' not found .*known: record"):
        paths.launch_file('deploy.launch.py')


def test_an_index_without_comsim_bringup_falls_back_to_the_checkout(no_root, tmp_path,
                                                                    monkeypatch):
    (tmp_path / 'share/ament_index/resource_index/packages').mkdir(parents=True)
    monkeypatch.setenv('AMENT_PREFIX_PATH', str(tmp_path))
    assert paths.share_root() == ROOT


def test_comsim_root_wins(no_root, tmp_path, monkeypatch):
    fake_ros_install(tmp_path / 'install')
    monkeypatch.setenv('AMENT_PREFIX_PATH', str(tmp_path / 'install'))
    monkeypatch.setenv('COMSIM_ROOT', str(tmp_path / 'mine'))
    assert paths.share_root() == tmp_path / 'mine'
    with pytest.raises(UserError, match='config/ not found .*mine/config does not exist.*'
                                        'COMSIM_ROOT'):
        paths.config_dir()
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError, match="'config/teleop.yaml' not found"):
        paths.resolve_config_path('config/teleop.yaml')
