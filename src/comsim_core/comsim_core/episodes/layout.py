"""How episodes lie on disk, and the one way to find them under a folder.

An episode is a directory holding rosbag2's ``metadata.yaml`` (written when the bag closes) and
our ``episode.yaml`` sidecar. Writers that publish whole episodes (the twin's generator, the
translator, replays, ground truth) build them in a hidden directory (``<out>/.partial/<name>``,
``<out>/.<name>.partial``) and rename them when done; failed replays are set aside as hidden
``.<name>.failed``. So hidden directories are never episodes to read, and a visible one whose
sidecar says ``status: complete`` is finished (what makes batches resumable).
"""

from __future__ import annotations

from pathlib import Path

from .errors import EpisodeNotFoundError
from .sidecar import read_sidecar

BAG_METADATA = 'metadata.yaml'   # rosbag2's index, present once the bag closed
PARTIAL_DIR = '.partial'         # <out>/.partial/<name>: an episode being written
COMPLETE = 'complete'            # sidecar ``status`` of a finished episode


def is_episode_dir(path: Path | str) -> bool:
    """Whether ``path`` holds a closed bag (its ``metadata.yaml``)."""
    return (Path(path) / BAG_METADATA).is_file()


def is_complete(path: Path | str, sidecar_format: str | None = None) -> bool:
    """A finished episode: bag closed and sidecar ``status: complete`` (and, when given, the
    sidecar's ``format``, e.g. only paired episodes)."""
    path = Path(path)
    if not is_episode_dir(path):
        return False
    side = read_sidecar(path)
    if not side or side.get('status') != COMPLETE:
        return False
    return sidecar_format is None or side.get('format') == sidecar_format


def find_episodes(folder: Path | str, *, complete_only: bool = False) -> list[Path]:
    """``folder`` itself when it is an episode, else every episode under it, in path order.

    Hidden directories (partial and failed output, see the module docstring) are skipped;
    ``complete_only`` also skips episodes not closed ``complete`` (crashed, failed, interrupted
    recordings). A folder that does not exist is an ``EpisodeNotFoundError``.
    """
    folder = Path(folder)
    if is_episode_dir(folder):
        found = [folder]
    elif not folder.is_dir():
        raise EpisodeNotFoundError(f'no episode folder at {folder}')
    else:
        found = sorted(p.parent for p in folder.rglob(BAG_METADATA)
                       if not any(part.startswith('.') for part in p.relative_to(folder).parts))
    return [p for p in found if is_complete(p)] if complete_only else found
