"""The one-line error policy every console script shares (comsim_core.errors.cli_main)."""
from __future__ import annotations

import errno

import pytest

from comsim_core.errors import UserError, cli_main


def _script(exc):
    @cli_main('comsim-probe')
    def main(argv=None):
        if exc is not None:
            raise exc
        return 0
    return main


def test_user_error_is_one_line_and_exit_2(capsys):
    code = _script(UserError('config/x.yaml: key lr: expected a number, got "fast"'))([])
    err = capsys.readouterr().err
    assert code == 2
    assert err == 'comsim-probe: error: config/x.yaml: key lr: expected a number, got "fast"\n'


def test_disk_full_and_missing_file_are_user_errors(capsys):
    full = OSError(errno.ENOSPC, 'No space left on device', '/data/ep/bag.mcap')
    assert _script(full)([]) == 2
    assert 'disk full writing /data/ep/bag.mcap' in capsys.readouterr().err
    assert _script(FileNotFoundError(errno.ENOENT, 'No such file or directory', 'a.yaml'))([]) == 2
    assert capsys.readouterr().err.strip().endswith('No such file or directory: a.yaml')


def test_disk_full_in_a_safetensors_write_is_the_same_one_line(capsys):
    from safetensors import SafetensorError

    # what safetensors raised when a policy checkpoint filled the disk (2026-12-07)
    full = SafetensorError('Error while serializing: I/O error: No space left on device '
                           '(os error 28)')
    assert _script(full)([]) == 2
    assert capsys.readouterr().err == ('comsim-probe: error: disk full: free space and rerun '
                                       '(finished work is kept)\n')


def test_debug_flag_and_env_reraise(monkeypatch):
    with pytest.raises(UserError):
        _script(UserError('bad'))(['--debug'])
    monkeypatch.setenv('COMSIM_DEBUG', '1')
    with pytest.raises(UserError):
        _script(UserError('bad'))([])


def test_bugs_keep_their_traceback():
    with pytest.raises(ZeroDivisionError):
        _script(ZeroDivisionError('a bug'))([])


def test_debug_flag_is_not_passed_on():
    seen = []

    @cli_main('comsim-probe')
    def main(argv=None):
        seen.append(argv)
        return 0
    assert main(['a', '--debug', 'b']) == 0
    assert seen == [['a', 'b']]
