"""Check that requirements/lock.txt resolves for another Python (Humble's 3.10) with pip.

Why not only `pip install --dry-run --python-version 3.10 -r lock.txt`: pip evaluates
environment markers (ours and the packages' own) for the Python it runs on, not the target, and
refuses sdists (empy) when resolving for another Python. So: the lock's markers are evaluated
for the target here; pip's finder then picks every pin for the target (`--no-deps`: a cp310/abi3/
py3 wheel, or an sdist admitting the Python for the few source-only pins); and every dependency
that pip reports for those pins, markers evaluated for the target, must be pinned and satisfied.

    python scripts/check_lock.py [--python 3.10] [--lock requirements/lock.txt]
Exit 0: resolves; 1: problems (one per line); 2: bad input or the index is unreachable.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / 'requirements' / 'lock.txt'
SOURCE_ONLY = ('empy',)   # pure Python, published as an sdist only
# Packages whose own dependencies are their build's business: torch pins its CUDA runtime
# (nvidia-*, triton) exactly in its PyPI wheels and has none in the local +cpu wheel.
OWN_RUNTIME = ('torch',)
UNREACHABLE = ('Could not fetch URL', 'Failed to establish a new connection',
               'Temporary failure in name resolution', 'Network is unreachable')


class IndexUnreachable(RuntimeError):
    """pip could not reach the package index."""


def environment(python: str) -> dict[str, str]:
    """Marker environment of this machine with another Python version (e.g. '3.10')."""
    env = dict(default_environment())
    env.update(python_version=python, python_full_version=f'{python}.0',
               implementation_version=f'{python}.0')
    return env


def pins_for(lock: Path, python: str) -> dict[str, Requirement]:
    """name -> the lock's `==` requirement that applies on `python`; ValueError on a bad line."""
    env = environment(python)
    pins: dict[str, Requirement] = {}
    for number, line in enumerate(lock.read_text(encoding='utf8').splitlines(), 1):
        line = line.split(' #')[0].strip()
        if not line or line.startswith('#'):
            continue
        try:
            req = Requirement(line)
        except InvalidRequirement as exc:
            raise ValueError(f'{lock}:{number}: {exc}') from None
        specs = list(req.specifier)
        if len(specs) != 1 or specs[0].operator != '==':
            raise ValueError(f'{lock}:{number}: {line!r} is not an exact pin (NAME==VERSION)')
        if req.marker is not None and not req.marker.evaluate(env):
            continue
        name = canonicalize_name(req.name)
        if name in pins:
            raise ValueError(f'{lock}:{number}: {req.name} pinned twice for Python {python}')
        pins[name] = req
    return pins


def _pip_report(pins: dict[str, Requirement], python: str) -> list[dict]:
    """pip's dry-run install report for the pins on `python`, dependencies not followed."""
    with tempfile.TemporaryDirectory() as tmp:
        reqs = Path(tmp) / 'pins.txt'
        reqs.write_text(''.join(f'{r.name}=={next(iter(r.specifier)).version}\n'
                                for r in pins.values()), encoding='utf8')
        report = Path(tmp) / 'report.json'
        cmd = [sys.executable, '-m', 'pip', 'install', '--dry-run', '--ignore-installed',
               '--no-deps', '--quiet', '--python-version', python, '--only-binary=:all:',
               '--no-binary', ','.join(SOURCE_ONLY), '--target', str(Path(tmp) / 'target'),
               '--report', str(report), '-r', str(reqs)]
        env = {**os.environ, 'PIP_DISABLE_PIP_VERSION_CHECK': '1'}
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp, env=env,
                              timeout=600, check=False)
        if proc.returncode != 0:
            errors = [ln for ln in proc.stderr.splitlines() if ln.startswith('ERROR')]
            if any(marker in proc.stderr for marker in UNREACHABLE) and not errors[1:]:
                raise IndexUnreachable(proc.stderr.strip().splitlines()[-1])
            raise RuntimeError('\n'.join(errors) or proc.stderr.strip())
        return json.loads(report.read_text(encoding='utf8'))['install']


def check(lock: Path = LOCK, python: str = '3.10') -> list[str]:
    """Problems resolving `lock` on `python` ([] when it resolves). Raises IndexUnreachable."""
    pins = pins_for(lock, python)
    try:
        installed = _pip_report(pins, python)
    except RuntimeError as exc:
        if isinstance(exc, IndexUnreachable):
            raise
        return str(exc).splitlines()
    env = environment(python)
    wanted = {name: set(req.extras) for name, req in pins.items()}
    needs = []
    for item in installed:
        meta = item['metadata']
        for text in meta.get('requires_dist') or []:
            dep = Requirement(text)
            if dep.marker is None or dep.marker.evaluate({**env, 'extra': ''}):
                wanted.setdefault(canonicalize_name(dep.name), set()).update(dep.extras)
    for item in installed:
        meta = item['metadata']
        extras = [''] + sorted(wanted.get(canonicalize_name(meta['name']), ()))
        for text in meta.get('requires_dist') or []:
            dep = Requirement(text)
            if dep.marker is None or any(dep.marker.evaluate({**env, 'extra': e})
                                         for e in extras):
                needs.append((meta, dep))
    problems = []
    for meta, dep in needs:
        pin = pins.get(canonicalize_name(dep.name))
        if pin is None:
            if canonicalize_name(meta['name']) not in OWN_RUNTIME:
                problems.append(f'{meta["name"]} {meta["version"]} needs {dep}: not pinned '
                                f'for Python {python}')
            continue
        version = next(iter(pin.specifier)).version
        if not dep.specifier.contains(version, prereleases=True):
            problems.append(f'{meta["name"]} {meta["version"]} needs {dep}; '
                            f'the lock pins {pin.name}=={version} for Python {python}')
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--python', default='3.10', help='target Python version (3.10)')
    parser.add_argument('--lock', type=Path, default=LOCK)
    args = parser.parse_args(argv)
    try:
        problems = check(args.lock, args.python)
    except (ValueError, OSError) as exc:
        print(f'check_lock: error: {exc}', file=sys.stderr)
        return 2
    except IndexUnreachable as exc:
        print(f'check_lock: package index unreachable: {exc}', file=sys.stderr)
        return 2
    for line in problems:
        print(line)
    if not problems:
        print(f'{args.lock} resolves for Python {args.python} on {platform.machine()}')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
