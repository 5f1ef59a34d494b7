"""Episode directory names: ``episode_0000_<task>``, numbered past every existing episode."""

from __future__ import annotations

import re
from pathlib import Path

EPISODE_RE = re.compile(r'^episode_(\d{4,})(?:_|$)')


def slugify(text: str, max_len: int = 40) -> str:
    """Filesystem-safe lower-case slug; 'untitled' for empty input."""
    slug = re.sub(r'[^a-z0-9]+', '_', text.lower()).strip('_')[:max_len].strip('_')
    return slug or 'untitled'


def episode_index(name: str) -> int | None:
    """The number in an episode directory name, or None for other names."""
    match = EPISODE_RE.match(name)
    return int(match.group(1)) if match else None


def next_episode_dir(output_dir: Path, task: str) -> Path:
    """A fresh, not yet existing path for the next episode of ``task`` under ``output_dir``."""
    output_dir = Path(output_dir)
    used = [i for p in output_dir.iterdir() if (i := episode_index(p.name)) is not None] \
        if output_dir.exists() else []
    index = max(used, default=-1) + 1
    while True:
        path = output_dir / f'episode_{index:04d}_{slugify(task)}'
        if not path.exists():
            return path
        index += 1
