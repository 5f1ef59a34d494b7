"""Where the policy's states and actions live: joint positions, or the tool's pose.

``joint`` (the default): states and actions are joint positions in the policy's joint order,
as recorded. ``end_effector``: both are the tool-centre point's position in the robot's base
frame, its yaw about the vertical, and the gripper opening (x, y, z, yaw, gripper), from the
robot model's forward kinematics. The tool is taken to point down, as the scripted experts
move it (``control.waypoints``: every waypoint is ``tool_down_rotation(yaw)``); roll and pitch
are not represented. The runner turns predicted poses back into joint targets with the model's
inverse kinematics for ``tool_down_rotation(yaw)``, each row seeded at the previous one's
solution (the first at the robot's current joints), so the controller and everything
downstream still see joint targets.

Why a second space: the same push made at two places on the table is one motion shifted in
these coordinates and two different joint motions; the move_card gate's joint-space policy
succeeded where its training layouts were dense and failed between them (docs/benchmarks.md,
"Policy capability gate"). Why yaw and not a full rotation: components the demonstrations never
move cost the diffusion model its fit (a 6-D rotation beside the position, constant for a tool
pointing down: 0.094 rad mean error on the test's circle against 0.007 without it).

Both spaces are pure numpy in and out; training converts its episode arrays once (after the
frame cache, which keeps the recorded joints), inference converts one window per chunk.
"""
from __future__ import annotations

import numpy as np

ACTION_SPACES = ('joint', 'end_effector')
POSE_DIM = 4            # position (3) + yaw of a tool pointing down
# Tighter than the IK's defaults (1 mm, 0.01 rad): each row is seeded at the one before, and
# what a row leaves within tolerance the next inherits (joints drifted 0.07 rad over 30 rows).
IK_POS_TOL_M = 2e-4
IK_ROT_TOL = 2e-3
# A predicted row the IK misses by more than this is refused (UnreachablePose): the arm holds
# instead of going to the nearest joints it found. Below it (the workspace's rim, a yaw at a
# wrist limit) the nearest joints are sent, limited like any joint target.
UNREACHABLE_POS_M = 0.02
UNREACHABLE_ROT = 0.25


END_EFFECTOR_NAMES = ('x', 'y', 'z', 'yaw', 'gripper')   # m, m, m, rad, gripper units


def action_names(action_space: str, joint_names: list[str]) -> list[str]:
    """What each number of a state or action is: the joint names, or ``END_EFFECTOR_NAMES``."""
    return list(END_EFFECTOR_NAMES) if action_space == 'end_effector' else list(joint_names)


class UnreachablePose(ValueError):
    """A predicted tool pose the robot cannot reach: the controller holds the arm."""


class JointSpace:
    """States and actions are the joint positions themselves."""

    name = 'joint'

    def __init__(self, joint_names: list[str]):
        self.dim = len(joint_names)

    def encode(self, q: np.ndarray) -> np.ndarray:
        return np.asarray(q, dtype=np.float32)

    def decode(self, x: np.ndarray, q_now: np.ndarray) -> np.ndarray:
        return np.asarray(x, dtype=np.float64)


class EndEffectorSpace:
    """Tool position, yaw and gripper through the robot model's kinematics."""

    name = 'end_effector'

    def __init__(self, joint_names: list[str], robot_model: str = ''):
        from comsim_core.robot.model import RobotModel  # noqa: PLC0415 - MuJoCo only here

        self.robot = RobotModel.load(robot_model or None)
        if list(joint_names) != list(self.robot.joint_names):
            raise ValueError(f'action_space end_effector needs joint_names to be the robot '
                             f'model\'s arm joints then its gripper, {self.robot.joint_names}; '
                             f'got {list(joint_names)}')
        self.n_arm = self.robot.n_arm
        self.dim = POSE_DIM + 1

    def encode(self, q: np.ndarray) -> np.ndarray:
        """(N, J) joint positions -> (N, 5) tool position, yaw and gripper."""
        q = np.asarray(q, dtype=np.float64)
        out = np.empty((q.shape[0], self.dim), dtype=np.float32)
        for i, row in enumerate(q):
            pos, rot = self.robot.fk(row[:self.n_arm])
            out[i, :3] = pos
            out[i, 3] = tool_yaw(rot)
            out[i, POSE_DIM] = row[self.n_arm]
        return out

    def decode(self, x: np.ndarray, q_now: np.ndarray) -> np.ndarray:
        """(H, 5) poses and gripper -> (H, J) joint targets, by IK from ``q_now`` (J,) along
        the rows, each seeded at the one before and never restarted elsewhere (no jump to
        another branch). A pose missed by less than ``UNREACHABLE_POS_M`` /
        ``UNREACHABLE_ROT`` gives the closest joints found (the controller's limits and
        velocity checks apply to them as to any joint target); a worse miss raises
        ``UnreachablePose``, and the controller holds the arm."""
        from comsim_core.robot.model import tool_down_rotation  # noqa: PLC0415

        x = np.asarray(x, dtype=np.float64)
        q = np.asarray(q_now, dtype=np.float64)[:self.n_arm].copy()
        out = np.empty((x.shape[0], self.n_arm + 1))
        for i, row in enumerate(x):
            res = self.robot.ik(row[:3], tool_down_rotation(float(row[3])), q0=q,
                                pos_tol=IK_POS_TOL_M, rot_tol=IK_ROT_TOL, restarts=0,
                                home_restart=False, raise_on_fail=False)
            if res.pos_err > UNREACHABLE_POS_M or res.rot_err > UNREACHABLE_ROT:
                raise UnreachablePose(
                    f'row {i} of the chunk: tool at {np.round(row[:3], 3).tolist()} m, yaw '
                    f'{row[3]:.2f} rad is out of reach (the IK stopped {res.pos_err:.3f} m, '
                    f'{res.rot_err:.2f} rad from it)')
            q = np.asarray(res.q, dtype=np.float64)[:self.n_arm]
            out[i, :self.n_arm] = q
            out[i, self.n_arm] = row[POSE_DIM]
        return out


def tool_yaw(rot: np.ndarray) -> float:
    """The yaw of ``tool_down_rotation(yaw)`` nearest to ``rot`` (its x axis in the table's
    plane), in (-pi, pi]."""
    return float(np.arctan2(-rot[1, 0], -rot[0, 0]))


def action_space(name: str, joint_names: list[str], robot_model: str = ''
                 ) -> JointSpace | EndEffectorSpace:
    """The space a config names (``PolicyConfig.action_space``)."""
    if name == 'joint':
        return JointSpace(joint_names)
    if name == 'end_effector':
        return EndEffectorSpace(joint_names, robot_model)
    raise ValueError(f'action_space {name!r}: expected one of {list(ACTION_SPACES)}')
