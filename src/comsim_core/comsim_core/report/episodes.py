"""Pictures of a recorded episode: evenly spaced frames, one row per camera."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from comsim_core.episodes.reader import Episode
from comsim_core.report.images import grid, label


def sample_frames(path: Path, topic: str, n: int) -> list[tuple[float, np.ndarray]]:
    """`n` evenly spaced (t_s from first frame, image) pairs of one camera topic."""
    with Episode.open(path) as ep:
        count = ep.streams[topic].count
        wanted = set(np.linspace(0, count - 1, n).round().astype(int).tolist())
        frames, t0 = [], None
        for i, (t_ns, img) in enumerate(ep.images(topic)):
            t0 = t_ns if t0 is None else t0
            if i in wanted:
                frames.append(((t_ns - t0) * 1e-9, img))
    return frames


def contact_sheet(path: Path, cameras: list[str], n: int = 6) -> np.ndarray:
    """One row per camera, `n` frames across the episode, each labelled with its time."""
    rows = []
    for cam in cameras:
        name = cam.strip('/').split('/')[1] if cam.count('/') > 2 else cam
        rows.append([label(img, f'{name} {t:.1f}s') for t, img in sample_frames(path, cam, n)])
    return grid(rows)
