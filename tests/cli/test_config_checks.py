"""The shared config checks: YAML syntax errors with file and line, dataclass keys and types."""
from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from comsim_core.errors import UserError, check_fields, load_yaml


@dataclass
class _Cfg:
    lr: float = 1e-3
    steps: int = 10
    name: str | None = None
    sizes: list[int] = field(default_factory=list)
    flag: bool = False


def test_load_yaml_names_file_and_line(tmp_path):
    f = tmp_path / 'c.yaml'
    f.write_text('a: 1\nb: [2\n')
    with pytest.raises(UserError, match=r'c.yaml:3:1: YAML syntax error: expected'):
        load_yaml(f)
    with pytest.raises(UserError, match='policy config .*none.yaml not found'):
        load_yaml(tmp_path / 'none.yaml', 'policy config')


@pytest.mark.parametrize('data,message', [
    ({'lr': 'fast'}, "f.yaml: lr: expected a number, got 'fast'"),
    ({'lr': '3e-4'}, "got '3e-4' (YAML reads it as text: write 0.0003)"),
    ({'steps': 2.5}, 'steps: expected an integer, got 2.5'),
    ({'steps': True}, 'steps: expected an integer, got True'),
    ({'name': 3}, 'name: expected a string or null, got 3'),
    ({'sizes': 'big'}, "sizes: expected a list, got 'big'"),
    ({'flag': 'yes please'}, "flag: expected true or false, got 'yes please'"),
    ({'lrr': 1}, 'f.yaml: unknown key(s) lrr; known: lr, steps, name, sizes, flag'),
])
def test_check_fields_names_key_expected_and_found(data, message):
    with pytest.raises(UserError) as err:
        check_fields(_Cfg, data, 'f.yaml')
    assert message in str(err.value)


def test_check_fields_accepts_what_the_dataclass_takes():
    check_fields(_Cfg, {'lr': 1, 'steps': 3, 'name': None, 'sizes': [1], 'flag': True}, 'f')
