"""Where a generated episode laid its objects out: the twin generator's ``metadata.randomisation``.

Episodes made from a generated one (the bench lab's filming of it, for instance) point back to
it with ``metadata.sim_source`` instead of copying its layout; ``generated_layout`` follows that
pointer, so every reader of a layout (which lab region a trajectory lies in, how training data
covers the table, probes) reads the same keys in one place.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .sidecar import read_sidecar

_MAX_HOPS = 4     # sim_source chains are one hop today; a bound keeps a cycle from looping


def generated_layout(episode: Path | str) -> dict[str, Any] | None:
    """The generator's layout of ``episode`` (its ``randomisation`` mapping), following
    ``metadata.sim_source`` when the episode films or derives from a generated one; None for
    an episode with no generated layout (a recorded demonstration) or whose source is gone."""
    path = Path(episode)
    for _ in range(_MAX_HOPS):
        meta = (read_sidecar(path) or {}).get('metadata') or {}
        if meta.get('randomisation'):
            return meta['randomisation']
        source = meta.get('sim_source')
        if not source:
            return None
        path = Path(source)
    return None


def object_starts(layout: dict[str, Any] | None) -> dict[str, list[float]]:
    """Start position (x, y, z) of every object a layout places, by name; empty for None."""
    objects = (layout or {}).get('objects') or {}
    return {name: [float(v) for v in obj['pos']] for name, obj in objects.items()
            if isinstance(obj, dict) and 'pos' in obj}
