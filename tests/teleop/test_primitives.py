"""Primitives and task programs: pure planning (no simulator), programs as validated data."""
import json

import numpy as np
import pytest

from comsim_core.control.waypoints import WaypointTrajectory
from comsim_core.robot.model import RobotModel
from comsim_core.tasks.primitives import API_DESCRIPTION, PRIMITIVES
from comsim_core.tasks.programs import (
    ProgramError,
    builtin_program,
    compile_program,
    parse_program,
)
from comsim_core.tasks.registry import UnknownTaskError, task_names


@pytest.fixture(scope='module')
def robot():
    return RobotModel.load()


def _block(pos, half, yaw=0.0):
    return {'pos': pos, 'quat': [np.cos(yaw / 2), 0, 0, np.sin(yaw / 2)], 'shape': 'box',
            'size': [half, half, half], 'color': [1, 0, 0]}


STACK = {'task': 'stack_blocks', 'table_z': 0.0,
         'objects': {'block_top': _block([0.35, -0.1, 0.0225], 0.0225, 0.3),
                     'block_bottom': _block([0.45, 0.05, 0.025], 0.025)}}
CARD = {'task': 'move_card', 'table_z': 0.0,
        'objects': {'card': {'pos': [0.4, 0.0, 0.002], 'quat': [1, 0, 0, 0], 'shape': 'box',
                             'size': [0.045, 0.03, 0.002], 'color': [1, 1, 1]}},
        'target': {'zone_center': [0.4, 0.14]}}
BOTTLE = {'task': 'shake_bottle', 'table_z': 0.0,
          'objects': {'bottle': {'pos': [0.4, 0.05, 0.05], 'quat': [1, 0, 0, 0],
                                 'shape': 'cylinder', 'size': [0.03, 0.05],
                                 'neck': [0.012, 0.015], 'color': [0, 1, 0]}}}


def test_stack_program_picks_top_and_places_on_bottom(robot):
    frames = compile_program(builtin_program('stack_blocks'), robot, STACK,
                             np.random.default_rng(0))
    closed = [f for f in frames if f.grip == 0.0]
    # first closed keyframe is at the top block, last closed one above the bottom block
    assert np.linalg.norm(closed[0].pos[:2] - [0.35, -0.1]) < 0.005
    assert np.linalg.norm(closed[-1].pos[:2] - [0.45, 0.05]) < 0.005
    assert closed[-1].pos[2] == pytest.approx(0.05 + 0.0225 + 0.004, abs=0.004)
    assert frames[-1].grip > 0.0                       # released at the end
    assert max(f.pos[2] for f in frames) > 0.1         # carried over, not dragged


def test_push_ends_short_of_the_zone_centre_on_the_push_line(robot):
    frames = compile_program(builtin_program('move_card'), robot, CARD, np.random.default_rng(1))
    low = [f for f in frames if f.pos[2] < 0.03]
    assert len(low) == 2 and all(f.grip == 0.0 for f in frames)
    start, end = low[0].pos, low[1].pos
    assert start[1] < 0.0 - 0.045 + 0.01 and 0.14 - 0.1 < end[1] < 0.14
    assert abs(end[0] - 0.4) < 0.01


def test_shake_oscillates_sideways_while_holding(robot):
    frames = compile_program(builtin_program('shake_bottle'), robot, BOTTLE,
                             np.random.default_rng(2))
    held = [f for f in frames if f.grip == 0.0]
    lifted = [f for f in held if f.pos[2] > 0.12]
    ys = np.array([f.pos[1] for f in lifted])
    assert np.sum(np.abs(np.diff(np.sign(ys - np.median(ys)))) > 0) >= 6
    assert frames[-1].grip > 0.0


def test_variation_from_seed_and_reproducible(robot):
    prog = builtin_program('shake_bottle')
    a = compile_program(prog, robot, BOTTLE, np.random.default_rng(3))
    b = compile_program(prog, robot, BOTTLE, np.random.default_rng(3))
    c = compile_program(prog, robot, BOTTLE, np.random.default_rng(4))
    assert all(np.allclose(x.pos, y.pos) for x, y in zip(a, b))
    assert len(a) != len(c) or not all(np.allclose(x.pos, y.pos) for x, y in zip(a, c))


def test_programs_follow_velocity_limits(robot):
    for task, state in (('stack_blocks', STACK), ('move_card', CARD), ('shake_bottle', BOTTLE)):
        traj = WaypointTrajectory(robot, robot.home,
                                  compile_program(builtin_program(task), robot, state,
                                                  np.random.default_rng(5)))
        q = np.array([traj.sample(t) for t in np.arange(0, traj.duration, 0.02)])
        assert np.all(np.abs(np.diff(q, axis=0)) / 0.02 <= robot.max_velocity * 1.05)


def test_program_is_json_data_round_trip():
    prog = builtin_program('shake_bottle')
    again = parse_program(prog.to_json())
    assert again == prog
    assert task_names() == ['move_card', 'shake_bottle', 'stack_blocks']
    with pytest.raises(UnknownTaskError, match=r"unknown task 'juggle'; known: \['move_card'"):
        builtin_program('juggle')
    for name in PRIMITIVES:
        assert name + '(' in API_DESCRIPTION


@pytest.mark.parametrize('bad, match', [
    ('not json', 'JSON'),
    ({'steps': []}, 'no steps'),
    ({'steps': [{'primitive': 'teleport'}]}, 'unknown primitive'),
    ({'steps': [{'primitive': 'grasp'}]}, 'missing arguments'),
    ({'steps': [{'primitive': 'grasp', 'object': 'x', 'force': 3}]}, 'unknown arguments'),
    ({'steps': [{'primitive': 'wait', 'seconds': {'__import__': 'os'}}]}, 'must be'),
])
def test_invalid_programs_are_rejected(bad, match):
    with pytest.raises(ProgramError, match=match):
        parse_program(bad if isinstance(bad, str) else json.dumps(bad))


def test_semantic_errors_surface_at_compile(robot):
    prog = parse_program([{'primitive': 'grasp', 'object': 'ghost'}], 'stack_blocks')
    with pytest.raises(ProgramError, match='ghost'):
        compile_program(prog, robot, STACK, np.random.default_rng(0))
    prog = parse_program([{'primitive': 'lift', 'height': 0.1}], 'stack_blocks')
    with pytest.raises(ProgramError, match='nothing held'):
        compile_program(prog, robot, STACK, np.random.default_rng(0))
