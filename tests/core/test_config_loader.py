"""The strict YAML-to-dataclass loader: every mistake is one line with file, key path, expected."""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import pytest

from comsim_core.config import ConfigError, field_error, load_config, type_name, value_type_name
from comsim_core.errors import UserError, cli_main


class Mode(enum.Enum):
    FAST = 'fast'
    SAFE = 'safe'


@dataclass
class Train:
    lr: float = 1e-3
    steps: int = 10
    name: str | None = None
    sizes: list[int] = field(default_factory=list)
    flag: bool = False

    def __post_init__(self) -> None:
        if self.lr <= 0:
            raise ConfigError(f'lr must be positive, got {self.lr}')
        if self.steps < 0:
            raise field_error(ConfigError, 'steps', f'must be >= 0, got {self.steps}')


@dataclass
class Cfg:
    task: str
    train: Train = field(default_factory=Train)
    kind: Literal['box', 'ball'] = 'box'
    mode: Mode = Mode.SAFE
    size: tuple[float, float] = (1.0, 2.0)
    weights: dict[str, float] = field(default_factory=dict)
    parts: dict[str, Train] = field(default_factory=dict)
    out: Path = Path('out')


@dataclass
class Nested:
    task: str
    parts: dict[str, Cfg]


class MissingError(ConfigError, KeyError):
    def __str__(self) -> str:
        return str(self.args[0])


def test_a_full_file_loads_with_every_type(tmp_path):
    f = tmp_path / 'c.yaml'
    f.write_text('task: stack\ntrain: {lr: 1, steps: 3, name: a, sizes: [1, 2], flag: true}\n'
                 'kind: ball\nmode: fast\nsize: [3, 4.5]\nweights: {real: 1}\n'
                 'parts: {p: {steps: 2}}\nout: here\n')
    cfg = load_config(f, Cfg)
    assert cfg == Cfg('stack', Train(1.0, 3, 'a', [1, 2], True), 'ball', Mode.FAST, (3.0, 4.5),
                      {'real': 1.0}, {'p': Train(steps=2)}, Path('here'))
    assert isinstance(cfg.train.lr, float) and isinstance(cfg.size, tuple)


def test_defaults_fill_what_the_file_leaves_out():
    assert load_config({'task': 't'}, Cfg) == Cfg('t')


@pytest.mark.parametrize('data,message', [
    ({'train': {'lr': 'fast'}}, "f.yaml: train.lr: expected a number, got 'fast'"),
    ({'train': {'lr': '3e-4'}}, "got '3e-4' (YAML reads it as text: write 0.0003)"),
    ({'train': {'steps': 2.5}}, 'f.yaml: train.steps: expected an integer, got 2.5'),
    ({'train': {'steps': True}}, 'train.steps: expected an integer, got True'),
    ({'train': {'name': 3}}, 'train.name: expected a string or null, got 3'),
    ({'train': {'sizes': 'big'}}, "train.sizes: expected a list of integers, got 'big'"),
    ({'train': {'sizes': [1, 'x']}}, "train.sizes[1]: expected an integer, got 'x'"),
    ({'train': {'flag': 'yes please'}}, "train.flag: expected true or false, got 'yes please'"),
    ({'train': {'lrr': 1}},
     'f.yaml: train: unknown key(s) lrr; known: lr, steps, name, sizes, flag'),
    ({'tsk': 1}, 'f.yaml: unknown key(s) tsk; known: task, train, kind'),
    ({'train': 3}, 'f.yaml: train: expected a mapping, got 3'),
    ({'kind': 'cone'}, "f.yaml: kind: expected one of 'box', 'ball', got 'cone'"),
    ({'mode': 'slow'}, "f.yaml: mode: expected one of 'fast', 'safe', got 'slow'"),
    ({'size': [1]}, 'f.yaml: size: expected a list of 2 numbers, got [1]'),
    ({'weights': {'real': 'a lot'}}, "f.yaml: weights.real: expected a number, got 'a lot'"),
    ({'parts': {'p': {'steps': 'x'}}}, "f.yaml: parts.p.steps: expected an integer, got 'x'"),
    ({'out': 3}, 'f.yaml: out: expected a path (string), got 3'),
    ({'train': {'lr': -1}}, 'f.yaml: train: lr must be positive, got -1.0'),
    ({'train': {'steps': -1}}, 'f.yaml: train.steps: must be >= 0, got -1'),
])
def test_each_mistake_names_file_key_path_and_expected(data, message):
    with pytest.raises(ConfigError) as err:
        load_config({'task': 't', **data}, Cfg, name='f.yaml')
    assert message in str(err.value)
    assert '\n' not in str(err.value)


def test_a_field_error_outside_the_loader_names_its_key():
    with pytest.raises(ConfigError, match='^steps: must be >= 0, got -2$'):
        Train(steps=-2)


def test_missing_required_key_has_its_own_error_class():
    with pytest.raises(MissingError, match="^f.yaml: missing key 'task'$"):
        load_config({}, Cfg, name='f.yaml', missing_error=MissingError)
    with pytest.raises(ConfigError, match="missing key 'task'"):
        load_config(None, Cfg)
    with pytest.raises(MissingError, match="^f.yaml: parts.p: missing key 'task'$"):
        load_config({'task': 't', 'parts': {'p': {}}}, Nested, name='f.yaml',
                    missing_error=MissingError)


def test_not_a_mapping_at_top_level(tmp_path):
    f = tmp_path / 'c.yaml'
    f.write_text('- a\n- b\n')
    with pytest.raises(ConfigError, match=r"c.yaml: expected a mapping, got \['a', 'b'\]"):
        load_config(f, Cfg)


def test_file_errors_name_the_file_and_line(tmp_path):
    with pytest.raises(UserError, match='policy config .*none.yaml not found'):
        load_config(tmp_path / 'none.yaml', Cfg, what='policy config')
    f = tmp_path / 'c.yaml'
    f.write_text('task: [1\n')
    with pytest.raises(UserError, match=r'c.yaml:2:1: YAML syntax error'):
        load_config(f, Cfg)


def test_a_file_nested_under_its_section_name(tmp_path):
    f = tmp_path / 'c.yaml'
    f.write_text('cfg:\n  task: t\n  train: {steps: many}\n')
    with pytest.raises(ConfigError, match="c.yaml: cfg.train.steps: expected an integer"):
        load_config(f, Cfg, section='cfg')
    f.write_text('cfg:\n  task: t\n')
    assert load_config(f, Cfg, section='cfg') == Cfg('t')


def test_a_part_of_a_larger_mapping_keeps_its_key_path():
    with pytest.raises(ConfigError, match="^f.yaml: parts.p.steps: expected an integer, got 'x'$"):
        load_config({'steps': 'x'}, Train, name='f.yaml', where='parts.p')


def test_the_error_class_is_the_callers():
    class LabError(UserError):
        pass
    with pytest.raises(LabError, match='train.lr'):
        load_config({'task': 't', 'train': {'lr': 'x'}}, Cfg, error=LabError)


def test_a_config_mistake_is_one_line_and_exit_2(capsys):
    @cli_main('comsim-probe')
    def main(argv=None):
        load_config({'task': 't', 'train': {'steps': 'x'}}, Cfg, name='p.yaml')
    assert main([]) == 2
    assert capsys.readouterr().err == ("comsim-probe: error: p.yaml: train.steps: expected an "
                                       "integer, got 'x'\n")


def test_type_names_are_shared():
    assert type_name(list[float]) == 'a list of numbers'
    assert type_name(tuple[int, int, int]) == 'a list of 3 integers'
    assert type_name(float | None) == 'a number or null'
    assert value_type_name(True) == 'true or false' and value_type_name(3) == 'an integer'
    with pytest.raises(TypeError, match='cannot read'):
        load_config({'x': 1}, _Unreadable)


@dataclass
class _Unreadable:
    x: complex
