"""Checkpoint files written so that a crash while saving leaves the previous ones readable.

Every checkpoint in ComSim is a config next to safetensors weights. Each file is written under a
temporary name beside its final one and renamed over it (``os.replace`` is atomic on POSIX), so
a reader sees the old file or the new one, never half of one.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def temporary_path(path: Path) -> Path:
    """A hidden name beside ``path`` (same file system, so the rename is atomic)."""
    return path.with_name(f'.{path.name}.tmp{os.getpid()}')


@contextmanager
def replacing(path: Path | str) -> Iterator[Path]:
    """Write to the yielded path; it replaces ``path`` when the block succeeds and is removed
    when it fails."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temporary_path(path)
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_text(path: Path | str, text: str) -> Path:
    with replacing(path) as tmp:
        tmp.write_text(text, encoding='utf8')
    return Path(path)


@contextmanager
def staged_directory(target: Path | str) -> Iterator[Path]:
    """A scratch directory inside ``target`` for a library that writes a whole directory itself
    (diffusers' ``save_pretrained``); when the block succeeds its files are renamed into
    ``target`` one by one, those in subdirectories first and top-level files (the config that
    describes them) last."""
    target = Path(target)
    target.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix='.saving-', dir=target))
    try:
        yield staging
        files = [p.relative_to(staging) for p in staging.rglob('*') if p.is_file()]
        for rel in sorted(files, key=lambda p: (len(p.parts) == 1, p)):
            (target / rel).parent.mkdir(parents=True, exist_ok=True)
            os.replace(staging / rel, target / rel)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
