"""Where launch and config files are found, so nodes and launch files started from any folder
read the same files, on a ROS install and on a pip one alike.

The folder holding `launch/` and `config/` is, first found wins: `COMSIM_ROOT` (set by hand or
by an image); `share/comsim_bringup` of a ROS install, found through the ament index (colcon
build, then `source install/setup.bash`); the source checkout holding this file (pip editable
installs, the tests); `share/comsim_bringup` of this Python's prefix (a plain `pip install`).
This module is the one place that decides; `comsim_bringup` asks it too.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

from comsim_core.errors import UserError

BRINGUP = 'comsim_bringup'
_NOT_FOUND = ('set COMSIM_ROOT to the folder that holds config/ and launch/, or source the '
              'ROS install that has comsim_bringup (source install/setup.bash)')


def repo_root() -> Path | None:
    """The workspace root (holding config/) for source and editable installs, else None."""
    env = os.environ.get('COMSIM_ROOT')
    if env:
        return Path(env)
    for parent in Path(__file__).resolve().parents:
        if (parent / 'config').is_dir() and (parent / 'src').is_dir():
            return parent
    return None


def installed_share() -> Path | None:
    """share/comsim_bringup of a ROS install on AMENT_PREFIX_PATH, else None."""
    try:
        from ament_index_python.packages import get_package_share_directory  # noqa: PLC0415
    except ImportError:
        return None
    try:
        return Path(get_package_share_directory(BRINGUP))
    except (LookupError, OSError, ValueError):  # not in the index, or no AMENT_PREFIX_PATH
        return None


def share_root() -> Path | None:
    """The folder holding launch/ and config/ (the order is in this module's docstring)."""
    if os.environ.get('COMSIM_ROOT'):
        return Path(os.environ['COMSIM_ROOT'])
    pip_share = Path(sys.prefix) / 'share' / BRINGUP
    return installed_share() or repo_root() or (pip_share if pip_share.is_dir() else None)


def _shipped(folder: str) -> Path:
    root = share_root()
    if root is None or not (root / folder).is_dir():
        where = f'{root}/{folder} does not exist' if root is not None else 'no ComSim install'
        raise UserError(f'ComSim {folder}/ not found ({where}); {_NOT_FOUND}')
    return root / folder


def config_dir() -> Path:
    """The shipped config/ folder (params files, training and lab configs)."""
    return _shipped('config')


def launch_file(name: str) -> Path:
    """A shipped launch file by name, e.g. ``record.launch.py``."""
    path = _shipped('launch') / name
    if not path.exists():
        known = ', '.join(sorted(p.name for p in path.parent.glob('*.launch.py')))
        raise UserError(f'launch file {name!r} not found in {path.parent} (known: {known})')
    return path


def resolve_config_path(path: str | os.PathLike) -> Path:
    """An existing file: absolute, relative to the current folder, or to the share root."""
    p = Path(path).expanduser()
    root = None
    if p.is_absolute() or p.exists():
        candidate = p
    else:
        root = share_root()
        candidate = root / p if root is not None and (root / p).exists() else p
    if not candidate.exists():
        raise FileNotFoundError(
            f'config file {str(path)!r} not found (looked in {Path.cwd()} and in '
            f'{root or share_root()}; '
            f'{_NOT_FOUND})')
    return candidate.resolve()
