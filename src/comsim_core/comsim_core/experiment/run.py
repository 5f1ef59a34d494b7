"""A resumable run: one JSON record per finished stage under ``<run>/stages``.

A rerun with the same run folder reads the records back and skips those stages; a stage that
was interrupted left no record and runs again, and its own tools skip the outputs they had
finished (generation, filming and translation skip complete episodes, training resumes from
its training state). ``run.json`` keeps the settings the run started with: resuming with other
settings would mix two experiments in one table, so it is refused. It also keeps the options
the run was started with (so a resume needs only the folder) and the amendments a resume made
that leave the experiment's settings alone (an arm left out, for example), each with its time.
"""
from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from comsim_core.errors import UserError


class RunMismatchError(UserError):
    """A run folder resumed with settings other than those it started with."""


def _write_json(path: Path, data: Any) -> None:
    """Write through a temporary file and rename: a killed process leaves the old file or the
    new one, never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f'.{path.name}.tmp')
    tmp.write_text(json.dumps(data, indent=1, default=str))
    os.replace(tmp, path)


class RunRecordError(UserError):
    """A run folder lacks the record a reader asked for (not a run, or a stage not finished)."""


def _run_record(run_dir: Path) -> dict[str, Any]:
    path = Path(run_dir) / 'run.json'
    if not path.is_file():
        raise RunRecordError(f'{path}: not a main-job run folder (no run.json)')
    return json.loads(path.read_text())


def run_settings(run_dir: Path) -> dict[str, Any]:
    """The settings a run started with (``run.json``), for tools that read a run, not resume it."""
    return _run_record(run_dir)['settings']


def run_options(run_dir: Path) -> dict[str, Any] | None:
    """The options the run started with, by name (None for a run that did not keep them)."""
    return _run_record(run_dir).get('options')


def run_amendments(run_dir: Path) -> list[dict[str, Any]]:
    """What resumes changed that the settings do not hold, oldest first (``Run.amend``)."""
    return _run_record(run_dir).get('amendments', [])


def stage_record(run_dir: Path, name: str) -> Path:
    """Where a finished stage's record lies: ``stages/<name>.json``."""
    return Path(run_dir) / 'stages' / f'{name}.json'


def stage_result(run_dir: Path, name: str) -> dict[str, Any]:
    """A finished stage's result, read from its record."""
    path = stage_record(run_dir, name)
    if not path.is_file():
        raise RunRecordError(f'{path}: stage {name!r} of this run has not finished')
    return json.loads(path.read_text())['result']


class Run:
    def __init__(self, run_dir: Path, settings: dict[str, Any],
                 options: dict[str, Any] | None = None):
        """Start ``run_dir`` with ``settings`` (and the ``options`` that made them), or resume
        it when it has started: then the settings must be those it started with."""
        self.dir = Path(run_dir)
        self.stages_dir = self.dir / 'stages'
        started = self.dir / 'run.json'
        if started.exists():
            before = run_settings(self.dir)
            changed = sorted(k for k in set(before) | set(settings)
                             if before.get(k) != settings.get(k))
            if changed:
                raise RunMismatchError(
                    f'{started}: this run started with other settings ({", ".join(changed)}: '
                    f'{[before.get(k) for k in changed]}, now {[settings.get(k) for k in changed]}'
                    '); resume it with the same ones or start a new --out')
        else:
            _write_json(started, {'settings': settings, 'options': options,
                                  'started': datetime.now(timezone.utc).isoformat()})
        self.settings = settings

    def amend(self, change: dict[str, Any]) -> None:
        """Record a change a resume makes that the settings do not hold, with its time."""
        record = _run_record(self.dir)
        record.setdefault('amendments', []).append(
            {**change, 'at': datetime.now(timezone.utc).isoformat(timespec='seconds')})
        _write_json(self.dir / 'run.json', record)

    def amendments(self) -> list[dict[str, Any]]:
        return run_amendments(self.dir)

    def record(self, name: str) -> Path:
        return stage_record(self.dir, name)

    def done(self, name: str) -> bool:
        return self.record(name).exists()

    def result(self, name: str) -> dict[str, Any]:
        return stage_result(self.dir, name)

    def stage(self, name: str, fn: Callable[[], dict[str, Any]],
              log: Callable[[str], None] = print) -> dict[str, Any]:
        """``fn()``'s result, run now or read back from an earlier run's record."""
        if self.done(name):
            log(f'[{name}] done in an earlier run ({self.record(name)}); skipped')
            return self.result(name)
        t0 = time.monotonic()
        result = fn()
        _write_json(self.record(name), {
            'stage': name, 'wall_s': round(time.monotonic() - t0, 1),
            'finished': datetime.now(timezone.utc).isoformat(), 'result': result})
        return result

    def timings(self) -> dict[str, float]:
        """Wall seconds of every finished stage, in the order they finished."""
        rows = [json.loads(p.read_text()) for p in self.stages_dir.glob('*.json')]
        return {r['stage']: r['wall_s'] for r in sorted(rows, key=lambda r: r['finished'])}
