"""LLM program writer without a network: parsing, sim validation, offline fallback."""
import logging
import os

import pytest

os.environ.setdefault('MUJOCO_GL', 'egl')
from comsim_core.tasks.programs import ProgramError, builtin_program
from comsim_twin.backends import make_backend
from comsim_twin.generation.config import GenerationConfig
from comsim_twin.generation.llm import (
    build_prompt,
    choose_program,
    extract_program,
    validate_program,
)
from fixtures.twin_scenes import base_scene

HAND_WRITTEN = """Here is the program:
```json
{"task": "stack_blocks", "steps": [
  {"primitive": "grasp", "object": "block_top"},
  {"primitive": "lift", "height": 0.1},
  {"primitive": "place", "on": "block_bottom"}]}
```"""
WRONG = ('{"task": "stack_blocks", "steps": [{"primitive": "grasp", "object": "block_top"},'
         '{"primitive": "lift", "height": 0.1}, {"primitive": "place", "at": [0.5, -0.1]}]}')


@pytest.fixture(scope='module')
def backend():
    b = make_backend('mujoco')
    yield b
    b.close()


@pytest.fixture(scope='module')
def cfg():
    return GenerationConfig.load()


def test_reply_parsing_is_json_only():
    prog = extract_program(HAND_WRITTEN, 'stack_blocks')
    assert [s.primitive for s in prog.steps] == ['grasp', 'lift', 'place']
    with pytest.raises(ProgramError):
        extract_program('__import__("os").system("true")', 'stack_blocks')
    with pytest.raises(ProgramError, match='unknown primitive'):
        extract_program('[{"primitive": "exec", "code": "x"}]', 'stack_blocks')
    assert 'grasp(object' in build_prompt('stack_blocks')[0]['content']


def test_valid_hand_written_program_passes_validation(backend, cfg):
    prog = extract_program(HAND_WRITTEN, 'stack_blocks')
    result = validate_program(prog, base_scene('stack_blocks'), 'stack_blocks', cfg, backend,
                              seeds=2)
    assert result.ok and result.successes == 2, result.reasons


def test_wrong_program_fails_validation(backend, cfg):
    # runs fine, but puts the block on the table instead of on the other block
    prog = extract_program(WRONG, 'stack_blocks')
    result = validate_program(prog, base_scene('stack_blocks'), 'stack_blocks', cfg, backend,
                              seeds=2)
    assert not result.ok and result.successes == 0
    assert 'off the bottom block' in result.reasons[0]
    bad = extract_program('[{"primitive": "grasp", "object": "ghost"}]', 'stack_blocks')
    result = validate_program(bad, base_scene('stack_blocks'), 'stack_blocks', cfg, backend, 2)
    assert not result.ok and 'ghost' in result.reasons[0]


def test_offline_falls_back_to_builtin_with_a_log_line(cfg, caplog):
    caplog.set_level(logging.INFO, logger='comsim_twin.generation.llm')
    off = cfg.with_overrides(llm={'endpoint': '', 'model': ''})
    assert choose_program('move_card', base_scene('move_card'), off) == \
        builtin_program('move_card')
    assert 'built-in program for move_card' in caplog.text
    caplog.clear()
    unreachable = cfg.with_overrides(llm={'endpoint': 'http://127.0.0.1:9/v1/chat/completions',
                                          'model': 'm', 'timeout_s': 2})
    assert choose_program('move_card', base_scene('move_card'), unreachable) == \
        builtin_program('move_card')
    assert 'failed' in caplog.text
