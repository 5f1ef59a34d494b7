"""``FrameCache``: decoded, resized episode arrays on disk, keyed by episode content.

Decoding a bag (CDR, image conversion, alignment, resizing) is far slower than a training step
consumes frames, so each episode is decoded once and stored as plain ``.npy`` files (memory-
mapped on load, never pickled). The key hashes the bag's bytes and every setting that changes
the arrays (cameras, joints, topics, image size), so a re-recorded or edited episode, or a new
image size, gets a fresh entry instead of stale frames.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import numpy as np

from ..config import PolicyConfig
from .episode_arrays import EpisodeArrays, load_episode_arrays

FORMAT = 1
_CHUNK = 1 << 22


def content_key(path: Path | str, config: PolicyConfig, source: str | None = None) -> str:
    """Hex digest over the episode's files and the settings that shape the arrays."""
    path = Path(path)
    h = hashlib.blake2b(digest_size=12)
    settings = {'format': FORMAT, 'joints': config.joint_names, 'cams': config.camera_topics,
                'joint_topic': config.joint_topic, 'cmd': config.command_topic,
                'size': list(config.image_size), 'source': source}
    h.update(json.dumps(settings, sort_keys=True).encode())
    for f in sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith('.')):
        h.update(f.name.encode())
        with f.open('rb') as fh:
            while chunk := fh.read(_CHUNK):
                h.update(chunk)
    return h.hexdigest()


class FrameCache:
    """``get(path)`` returns the episode's arrays, decoding only on a cache miss."""

    def __init__(self, root: Path | str | None, config: PolicyConfig) -> None:
        self.root = Path(root) if root is not None else None
        self.config = config
        self.hits = 0
        self.misses = 0

    def entry_dir(self, path: Path | str, source: str | None = None) -> Path:
        if self.root is None:
            raise ValueError('this FrameCache has no directory (root=None)')
        path = Path(path)
        return self.root / f'{path.name}-{content_key(path, self.config, source)}'

    def get(self, path: Path | str, source: str | None = None) -> EpisodeArrays:
        """Cached arrays (memory-mapped) or decode, store, and return them."""
        if self.root is None:
            self.misses += 1
            return load_episode_arrays(path, self.config, source)
        entry = self.entry_dir(path, source)
        if (entry / 'meta.json').exists():
            self.hits += 1
            return _read(entry)
        self.misses += 1
        arrays = load_episode_arrays(path, self.config, source)
        _write(entry, arrays, self.config)
        return _read(entry)


def _write(entry: Path, arrays: EpisodeArrays, config: PolicyConfig) -> None:
    tmp = entry.with_name(f'.{entry.name}.tmp{os.getpid()}')
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for i, cam in enumerate(config.camera_topics):
        np.save(tmp / f'images_{i}.npy', arrays.images[cam], allow_pickle=False)
    for name in ('state', 'action', 't_ns'):
        np.save(tmp / f'{name}.npy', getattr(arrays, name), allow_pickle=False)
    meta = {'name': arrays.name, 'source': arrays.source, 'cameras': config.camera_topics,
            'native_sizes': arrays.native_sizes, 'commands_used': arrays.commands_used}
    (tmp / 'meta.json').write_text(json.dumps(meta), encoding='utf8')
    try:
        os.replace(tmp, entry)
    except OSError:  # another process filled the same entry first: theirs is identical
        shutil.rmtree(tmp, ignore_errors=True)


def _read(entry: Path) -> EpisodeArrays:
    meta = json.loads((entry / 'meta.json').read_text(encoding='utf8'))

    def load(name: str) -> np.ndarray:
        return np.load(entry / name, mmap_mode='r', allow_pickle=False)

    images = {cam: load(f'images_{i}.npy') for i, cam in enumerate(meta['cameras'])}
    return EpisodeArrays(meta['name'], meta['source'], images, np.asarray(load('state.npy')),
                         np.asarray(load('action.npy')), np.asarray(load('t_ns.npy')),
                         meta['native_sizes'], meta['commands_used'])
