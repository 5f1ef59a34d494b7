"""Rollouts written down as they finish, so an interrupted evaluation continues where it stopped.

The paper-scale experiment rolls out six checkpoints x three cells x 40 seeds (about an hour
on two cores); a killed session must not throw away the rollouts already run. Each finished
rollout is one JSON line in ``rollouts.jsonl`` beside ``results.json``, keyed by what makes it
the same rollout: the checkpoint's weights and config (their digest, not their path: a
retrained checkpoint is a new policy), the task, region, variant and seed, and the evaluation's
settings (environment, controller, latency, timeouts). Rollouts are deterministic for that key,
so reusing a journalled one is the same as running it again. A line from other settings or
weights is never reused; a torn last line (the process killed mid-write) is skipped.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

from .results import Rollout

JOURNAL_NAME = 'rollouts.jsonl'
_CHECKPOINT_FILES = ('model.safetensors', 'config.yaml')


def checkpoint_digest(checkpoint: Path | str) -> str:
    """sha256 over the checkpoint's weights and config (what decides its actions)."""
    h = hashlib.sha256()
    for name in _CHECKPOINT_FILES:
        path = Path(checkpoint) / name
        h.update(name.encode())
        if path.is_file():
            with path.open('rb') as fh:
                for block in iter(lambda: fh.read(1 << 20), b''):
                    h.update(block)
    return h.hexdigest()[:16]


def settings_digest(settings: dict[str, Any]) -> str:
    """Digest of the evaluation settings a rollout's outcome depends on."""
    text = json.dumps(settings, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def rollout_key(checkpoint_digest_: str, task: str, region: str, variant: str, seed: int) -> str:
    return f'{checkpoint_digest_}/{task}/{region}/{variant or "default"}/{int(seed)}'


class RolloutJournal:
    """Append-only record of finished rollouts under one settings digest."""

    def __init__(self, out_dir: Path | str, settings: str):
        self.path = Path(out_dir) / JOURNAL_NAME
        self.settings = settings

    def load(self) -> dict[str, Rollout]:
        """Rollouts journalled under these settings, by key (the last one of a key wins)."""
        if not self.path.is_file():
            return {}
        names = {f.name for f in fields(Rollout)}
        done: dict[str, Rollout] = {}
        with self.path.open(encoding='utf8') as fh:
            for line in fh:
                try:
                    entry = json.loads(line)
                    if entry.get('settings') != self.settings:
                        continue
                    done[entry['key']] = Rollout(**{k: v for k, v in entry['rollout'].items()
                                                    if k in names})
                except (ValueError, KeyError, TypeError):
                    continue      # a torn line from a killed process, or an older format
        return done

    def append(self, key: str, rollout: Rollout) -> None:
        """One line per rollout, flushed to disk before the next is reported."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps({'key': key, 'settings': self.settings, 'rollout': asdict(rollout)})
        with self.path.open('a+b') as fh:
            if fh.tell() and (fh.seek(-1, os.SEEK_END), fh.read(1))[1] != b'\n':
                fh.write(b'\n')          # end a torn line first, or it would swallow this one
            fh.write(line.encode('utf8') + b'\n')
            fh.flush()
            os.fsync(fh.fileno())
