"""requirements/lock.txt resolves on Humble's Python 3.10 (pip's finder, the lock's markers)."""
import os
import socket
import sys
import time
from pathlib import Path
from urllib.parse import urlparse

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / 'scripts'))
import check_lock  # noqa: E402


def _index_reachable() -> bool:
    """The package index pip uses answers a TCP connection (PIP_INDEX_URL or PyPI)."""
    host = urlparse(os.environ.get('PIP_INDEX_URL', 'https://pypi.org/simple')).hostname
    if not host:  # a file:// index
        return True
    try:
        socket.create_connection((host, 443), timeout=5).close()
    except OSError:
        return False
    return True


def test_markers_pick_one_pin_per_python():
    on_310 = check_lock.pins_for(check_lock.LOCK, '3.10')
    on_311 = check_lock.pins_for(check_lock.LOCK, '3.11')
    version = {name: str(req.specifier) for name, req in on_310.items()}
    assert version['mujoco'] != str(on_311['mujoco'].specifier) == '==4.0.0'
    assert version['numpy'] != str(on_311['numpy'].specifier) == '==2.4.6'
    assert 'mujoco-core' in on_311 and 'mujoco-core' not in on_310
    assert 'tomli' in on_310 and 'tomli' not in on_311  # pytest needs it below 3.11


def test_bad_lock_line_is_one_line_and_exit_2(tmp_path, capsys):
    lock = tmp_path / 'lock.txt'
    lock.write_text('numpy>=2\n')
    assert check_lock.main(['--lock', str(lock)]) == 2
    err = capsys.readouterr().err.strip()
    assert '\n' not in err and 'lock.txt:1' in err and 'exact pin' in err


@pytest.mark.skipif(not _index_reachable(), reason='package index unreachable: the Python 3.10 '
                    'resolution needs it (run scripts/check_lock.py where it is)')
@pytest.mark.timeout(240)
def test_lock_resolves_for_python_310():
    start = time.monotonic()
    try:
        problems = check_lock.check(check_lock.LOCK, '3.10')
    except check_lock.IndexUnreachable as exc:
        pytest.skip(f'package index unreachable: {exc}')
    assert problems == [], '\n'.join(problems)
    assert time.monotonic() - start < 120, 'the resolution check should stay short'
