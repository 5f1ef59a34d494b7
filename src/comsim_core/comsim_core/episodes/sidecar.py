"""The ``episode.yaml`` sidecar: human-readable episode metadata next to the bag.

It is written when recording starts (so a crashed episode still says what it was) and replaced
atomically (tmp file + ``os.replace``) on every update, so readers never see a half-written file.

Which episodes are successful demonstrations (``counts_as_success``): ``success: true`` on an
episode that closed ``complete``. A failed, interrupted or recovered episode never counts unless
a person looked at it and confirmed it (``confirm_success``, on the command line
``comsim-recover --confirm-success NAME EPISODE``), which records who and when.
"""

from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml

from ..errors import UserError

SIDECAR_NAME = 'episode.yaml'
SIDECAR_FORMAT = 'comsim-episode/1'   # the `format` field of every sidecar
# libyaml's safe loader where PyYAML was built with it: the same safe subset as yaml.safe_load
# (no arbitrary objects), parsed in C (~10x faster: sidecars are read per episode, in batches).
_SAFE_LOADER = getattr(yaml, 'CSafeLoader', yaml.SafeLoader)


def load_yaml(text: str) -> Any:
    """``yaml.safe_load`` semantics, with the C parser when available."""
    return yaml.load(text, Loader=_SAFE_LOADER)  # noqa: S506 - a safe loader


def sidecar_path(episode_dir: Path) -> Path:
    """Where the sidecar of ``episode_dir`` lives."""
    return Path(episode_dir) / SIDECAR_NAME


def to_plain(value: Any) -> Any:
    """Convert tuples, Paths and numpy scalars to YAML-safe builtins, recursively."""
    if isinstance(value, dict):
        return {str(k): to_plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_plain(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, 'item') and callable(value.item):  # numpy scalar
        return value.item()
    return value


def dump_yaml(data: dict[str, Any]) -> str:
    """Stable, block-style YAML text (safe dumper: plain builtins only)."""
    return yaml.safe_dump(to_plain(data), sort_keys=False, default_flow_style=False,
                          allow_unicode=True)


def write_sidecar(episode_dir: Path, data: dict[str, Any]) -> Path:
    """Atomically (re)write ``episode.yaml``; the old content stays intact if this fails."""
    path = sidecar_path(episode_dir)
    tmp = path.with_name(f'.{path.name}.tmp')
    text = dump_yaml(data)
    try:
        with tmp.open('w', encoding='utf8') as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def read_sidecar(episode_dir: Path) -> dict[str, Any] | None:
    """The sidecar's content, or ``None`` when there is none."""
    path = sidecar_path(episode_dir)
    if not path.exists():
        return None
    data = load_yaml(path.read_text(encoding='utf8'))
    return data if isinstance(data, dict) else {'value': data}


def update_sidecar(episode_dir: Path, **changes: Any) -> dict[str, Any]:
    """Merge ``changes`` into the sidecar (top level) and rewrite it atomically."""
    data = read_sidecar(episode_dir) or {}
    data.update(changes)
    write_sidecar(episode_dir, data)
    return data


def counts_as_success(side: dict[str, Any] | None) -> bool:
    """Whether a sidecar describes a successful demonstration (see the module docstring)."""
    if not side or side.get('success') is not True:
        return False
    return side.get('status') == 'complete' or bool(side.get('success_confirmed_by'))


def confirm_success(episode_dir: Path, by: str) -> dict[str, Any]:
    """A person's ``success: true`` for an episode the recorder could not vouch for."""
    if not by.strip():
        raise UserError(f'{sidecar_path(episode_dir)}: confirming success needs the name of '
                        'the person who checked the episode')
    if read_sidecar(episode_dir) is None:
        raise UserError(f'{sidecar_path(episode_dir)}: no episode.yaml to mark')
    stamp = datetime.now(timezone.utc).isoformat(timespec='seconds')
    return update_sidecar(episode_dir, success=True, success_confirmed_by=by.strip(),
                          success_confirmed_at=stamp)
