"""Where config files are found, so nodes started from any folder read the same files."""
from __future__ import annotations

import os
from pathlib import Path


def repo_root() -> Path | None:
    """The workspace root (holding config/) for source and editable installs, else None."""
    env = os.environ.get('COMSIM_ROOT')
    if env:
        return Path(env)
    for parent in Path(__file__).resolve().parents:
        if (parent / 'config').is_dir() and (parent / 'src').is_dir():
            return parent
    return None


def resolve_config_path(path: str | os.PathLike) -> Path:
    """An existing file: absolute, relative to the current folder, or to the workspace root."""
    p = Path(path).expanduser()
    if p.is_absolute() or p.exists():
        candidate = p
    else:
        root = repo_root()
        candidate = root / p if root is not None and (root / p).exists() else p
    if not candidate.exists():
        raise FileNotFoundError(
            f'config file {str(path)!r} not found (looked in {Path.cwd()} and in the workspace '
            f'root {repo_root()}; set COMSIM_ROOT to the folder that holds config/)')
    return candidate.resolve()
