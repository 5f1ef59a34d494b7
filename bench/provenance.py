"""What every bench result records besides its numbers, and where it goes.

Each result is one JSON file with the command that produced it, the commit it ran on, the date
and the machine. These machines are shared and noisy, so the load average is part of it. One
rule for where results go: ``--out PATH``, by default ``bench/results/<script>.json``.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS_DIR = ROOT / 'bench' / 'results'


def use_fixtures() -> None:
    """Let a bench script import ``fixtures.*`` (the episode and scene builders tests share)."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))


def add_out_argument(parser: argparse.ArgumentParser, script: str) -> None:
    """``--out PATH``, defaulting to bench/results/<script's name>.json."""
    default = RESULTS_DIR / f'{Path(script).stem}.json'
    parser.add_argument('--out', type=Path, default=default,
                        help=f'result JSON (default: {default.relative_to(ROOT)})')


def command() -> str:
    """The command line as run, quoted so that it can be pasted back into a shell."""
    return shlex.join([sys.executable, *sys.argv])


def commit() -> dict[str, Any]:
    """The commit the bench ran on, and whether the working tree differed from it."""
    def git(*args: str) -> str | None:
        try:
            res = subprocess.run(['git', '-C', str(ROOT), *args], capture_output=True, text=True,
                                 check=True, timeout=30)
        except (OSError, subprocess.SubprocessError):
            return None
        return res.stdout.strip()
    status = git('status', '--porcelain', '--untracked-files=no')
    return {'sha': git('rev-parse', 'HEAD'),
            'uncommitted_changes': None if status is None else bool(status)}


def machine(**extra: Any) -> dict[str, Any]:
    """Platform, CPUs, Python and load average (1/5/15 min, at the time of the call);
    ``extra`` adds what the bench depends on (library versions, GL backend...)."""
    try:
        load = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        load = None
    return {'platform': platform.platform(), 'processor': platform.processor(),
            'cpus': os.cpu_count(), 'python': platform.python_version(), 'load_average': load,
            **extra}


def torch_machine(**extra: Any) -> dict[str, Any]:
    """``machine`` plus torch's version, CPU threads and GPU (None on CPU)."""
    import torch  # noqa: PLC0415 - only the torch benches pay for the import

    gpu = torch.cuda.get_device_name() if torch.cuda.is_available() else None
    return machine(torch=torch.__version__, threads=torch.get_num_threads(), gpu=gpu, **extra)


def write_result(path: Path, result: dict[str, Any], machine_info: dict[str, Any]) -> Path:
    """Write ``result`` to ``path`` with its provenance first (command, commit, date, machine)."""
    record = {'command': command(), 'commit': commit(),
              'date': time.strftime('%Y-%m-%d %H:%M:%S %Z'), 'machine': machine_info, **result}
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1, default=float) + '\n')
    print(f'wrote {path}')
    return path
