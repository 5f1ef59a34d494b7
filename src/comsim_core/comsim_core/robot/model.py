"""Kinematic robot model: FK, Jacobian and damped-least-squares IK on a private MjModel.

Every stage (bench lab, teleop, twin, policy) needs the same kinematics without owning a
simulation, so this class keeps its own MjModel/MjData and only runs mj_kinematics/mj_jac.
Frames: the "base frame" is the world frame of the robot's own model file (the default arm
stands at the origin; the bench lab attaches it at the world origin, so both agree).
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import mujoco
import numpy as np

DEFAULT_ARM_PATH = str(Path(__file__).resolve().parent / 'assets' / 'comsim_arm.xml')
DEFAULT_GRIPPER_JOINTS = ('finger_left', 'finger_right')
_DEFAULT_REVOLUTE_VEL = 2.0   # rad/s, used when a model gives no limit
_DEFAULT_PRISMATIC_VEL = 0.1  # m/s


class IKError(ValueError):
    """Raised when IK cannot reach a target within tolerance (carries the best result)."""

    def __init__(self, message: str, result: 'IKResult'):
        super().__init__(message)
        self.result = result


@dataclass
class IKResult:
    """Outcome of an IK solve: the best joint vector found and its residual errors."""

    q: np.ndarray
    success: bool
    pos_err: float
    rot_err: float
    iterations: int


def _rot_error(r_cur: np.ndarray, r_tgt: np.ndarray) -> np.ndarray:
    """Axis-angle vector (world frame) rotating r_cur onto r_tgt."""
    r_err = r_tgt @ r_cur.T
    quat = np.zeros(4)
    mujoco.mju_mat2Quat(quat, r_err.reshape(-1))
    vel = np.zeros(3)
    mujoco.mju_quat2Vel(vel, quat, 1.0)
    return vel


def _urdf_velocity_limits(path: str) -> dict[str, float]:
    """URDF <limit velocity> per joint (MuJoCo's URDF import drops it)."""
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError:
        return {}
    out: dict[str, float] = {}
    for joint in root.iter('joint'):
        limit = joint.find('limit')
        if limit is not None and limit.get('velocity') is not None:
            out[joint.get('name', '')] = float(limit.get('velocity'))
    return out


class RobotModel:
    """Arm + gripper kinematics. Joint vector order: arm joints, then 'gripper' (opening, m)."""

    def __init__(self, model: mujoco.MjModel, mjcf_path: str,
                 gripper_joints: Sequence[str] = DEFAULT_GRIPPER_JOINTS,
                 tcp_site: str = 'tcp', velocity_overrides: dict[str, float] | None = None):
        self.model = model
        self.data = mujoco.MjData(model)
        self.mjcf_path = mjcf_path
        names = [model.joint(i).name for i in range(model.njnt)]
        allowed = (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE))
        self.gripper_joint_names = [g for g in gripper_joints if g in names]
        self.arm_joint_names = [n for i, n in enumerate(names)
                                if int(model.jnt_type[i]) in allowed and n not in gripper_joints]
        if not self.arm_joint_names:
            raise ValueError(f'{mjcf_path}: no hinge/slide arm joints found')
        self.joint_names = self.arm_joint_names + ['gripper']
        self.n_arm = len(self.arm_joint_names)
        jids = [model.joint(n).id for n in self.arm_joint_names]
        self._qadr = np.array([model.jnt_qposadr[j] for j in jids])
        self._dadr = np.array([model.jnt_dofadr[j] for j in jids])
        self._grip_qadr = [model.jnt_qposadr[model.joint(g).id] for g in self.gripper_joint_names]
        lower, upper = [], []
        for j in jids:
            lim = model.jnt_range[j] if model.jnt_limited[j] else (-np.pi, np.pi)
            lower.append(lim[0])
            upper.append(lim[1])
        if self.gripper_joint_names:
            g = model.joint(self.gripper_joint_names[0])
            glim = g.range if model.jnt_limited[g.id] else (0.0, 0.04)
            lower.append(max(0.0, float(glim[0])))
            upper.append(float(glim[1]))
        else:
            lower.append(0.0)
            upper.append(0.0)
        self.lower = np.array(lower, dtype=float)
        self.upper = np.array(upper, dtype=float)
        self.max_velocity = self._velocity_limits(jids, velocity_overrides or {})
        self.tcp_site = tcp_site if _has_site(model, tcp_site) else None
        self._tcp_body = model.jnt_bodyid[jids[-1]]
        self.home = self._home_pose()

    # ---------------------------------------------------------------- loading
    @classmethod
    def load(cls, path: str | None = None,
             gripper_joints: Sequence[str] = DEFAULT_GRIPPER_JOINTS,
             tcp_site: str = 'tcp') -> 'RobotModel':
        """Load the default arm (path None) or any MJCF/URDF file MuJoCo can read."""
        mjcf_path = DEFAULT_ARM_PATH if path is None else str(path)
        if not Path(mjcf_path).is_file():
            raise FileNotFoundError(f'robot model file not found: {mjcf_path}')
        try:
            model = mujoco.MjModel.from_xml_path(mjcf_path)
        except ValueError as exc:
            raise ValueError(f'{mjcf_path}: MuJoCo could not load the robot model: {exc}') from exc
        overrides = _urdf_velocity_limits(mjcf_path) if mjcf_path.lower().endswith('.urdf') else {}
        return cls(model, mjcf_path, gripper_joints, tcp_site, overrides)

    def _velocity_limits(self, jids: list[int], overrides: dict[str, float]) -> np.ndarray:
        """Per-joint speed limits.

        From the custom numeric 'comsim_max_velocity', URDF limits, or defaults.
        """
        n = self.n_arm + 1
        try:
            data = np.array(self.model.numeric('comsim_max_velocity').data, dtype=float)
            if data.size == n:
                return data
        except KeyError:
            pass
        out = []
        for j, name in zip(jids, self.arm_joint_names):
            is_slide = int(self.model.jnt_type[j]) == int(mujoco.mjtJoint.mjJNT_SLIDE)
            default = _DEFAULT_PRISMATIC_VEL if is_slide else _DEFAULT_REVOLUTE_VEL
            out.append(overrides.get(name, default))
        out.append(_DEFAULT_PRISMATIC_VEL)
        return np.array(out, dtype=float)

    def _home_pose(self) -> np.ndarray:
        """Keyframe 'home' if the model has one, else an IK ready pose over the table."""
        try:
            key = self.model.key('home')
            q = np.append(key.qpos[self._qadr], self.upper[-1])
            return self.clamp(q)
        except KeyError:
            pass
        q = self.clamp(np.zeros(self.n_arm + 1))
        q[-1] = self.upper[-1]
        return q

    # ---------------------------------------------------------------- kinematics
    def clamp(self, q: np.ndarray) -> np.ndarray:
        """Clip a joint vector (arm + gripper, or arm only) to the joint limits."""
        q = np.asarray(q, dtype=float)
        n = q.shape[-1]
        if n not in (self.n_arm, self.n_arm + 1):
            raise ValueError(f'expected {self.n_arm} or {self.n_arm + 1} joint values, got {n}')
        return np.clip(q, self.lower[:n], self.upper[:n])

    def _set(self, q: np.ndarray) -> None:
        q = np.asarray(q, dtype=float)
        self.data.qpos[self._qadr] = q[:self.n_arm]
        if q.shape[-1] > self.n_arm:
            for adr in self._grip_qadr:
                self.data.qpos[adr] = q[self.n_arm]
        mujoco.mj_kinematics(self.model, self.data)
        mujoco.mj_comPos(self.model, self.data)

    def _tcp_pose(self) -> tuple[np.ndarray, np.ndarray]:
        if self.tcp_site is not None:
            s = self.data.site(self.tcp_site)
            return s.xpos.copy(), s.xmat.reshape(3, 3).copy()
        b = self.data.body(self._tcp_body)
        return b.xpos.copy(), b.xmat.reshape(3, 3).copy()

    def fk(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """TCP position (3,) and rotation matrix (3, 3) in the base frame."""
        self._set(q)
        return self._tcp_pose()

    def _jac_current(self) -> np.ndarray:
        jacp = np.zeros((3, self.model.nv))
        jacr = np.zeros((3, self.model.nv))
        if self.tcp_site is not None:
            mujoco.mj_jacSite(self.model, self.data, jacp, jacr, self.model.site(self.tcp_site).id)
        else:
            mujoco.mj_jacBody(self.model, self.data, jacp, jacr, self._tcp_body)
        return np.vstack([jacp[:, self._dadr], jacr[:, self._dadr]])

    def jacobian(self, q: np.ndarray) -> np.ndarray:
        """Geometric TCP Jacobian (6, n_arm): rows linear then angular velocity, base frame."""
        self._set(q)
        return self._jac_current()

    def dls_step(self, q: np.ndarray, twist6: np.ndarray, damping: float = 0.05) -> np.ndarray:
        """Joint velocity dq (n_arm,) realising an end-effector twist [v; w] (damped LS)."""
        jac = self.jacobian(q)
        twist = np.asarray(twist6, dtype=float).reshape(6)
        jjt = jac @ jac.T + (damping ** 2) * np.eye(6)
        return jac.T @ np.linalg.solve(jjt, twist)

    def ik(self, target_pos: np.ndarray, target_rot: np.ndarray | None = None,
           q0: np.ndarray | None = None, pos_tol: float = 1e-3, rot_tol: float = 1e-2,
           max_iter: int = 200, damping: float = 0.05, restarts: int = 4,
           raise_on_fail: bool = True, seed: int = 0,
           home_restart: bool = True) -> np.ndarray | IKResult:
        """Damped least squares IK for the TCP, respecting joint limits.

        Starts at ``q0``, then (until one succeeds) at home when ``home_restart`` and at
        ``restarts`` random joint vectors. Tracking a path wants ``home_restart=False,
        restarts=0``: a restart may land on another branch, a jump in joint space.
        Returns the joint vector in the length of q0 (arm or arm + gripper; gripper kept).
        On failure raises IKError (or returns the IKResult when raise_on_fail is False).
        """
        target_pos = np.asarray(target_pos, dtype=float).reshape(3)
        q_start = self.home.copy() if q0 is None else np.asarray(q0, dtype=float).copy()
        full = q_start.shape[-1] == self.n_arm + 1
        arm0 = self.clamp(q_start[:self.n_arm])
        rng = np.random.default_rng(seed)
        best: IKResult | None = None
        starts = [arm0, self.home[:self.n_arm]] if home_restart else [arm0]
        for _ in range(restarts):
            starts.append(rng.uniform(self.lower[:self.n_arm], self.upper[:self.n_arm]))
        for start in starts:
            res = self._ik_once(start, target_pos, target_rot, pos_tol, rot_tol, max_iter, damping)
            if best is None or (res.success and not best.success) or \
                    (res.success == best.success and res.pos_err + 0.1 * res.rot_err
                     < best.pos_err + 0.1 * best.rot_err):
                best = res
            if res.success:
                break
        assert best is not None
        if full:
            best.q = np.append(best.q, q_start[-1])
        if not best.success:
            msg = (f'IK failed: target {np.round(target_pos, 4).tolist()} unreachable '
                   f'(pos_err {best.pos_err:.4f} m, rot_err {best.rot_err:.4f} rad)')
            if raise_on_fail:
                raise IKError(msg, best)
            return best
        return best.q if raise_on_fail else best

    def _ik_once(self, q: np.ndarray, target_pos: np.ndarray, target_rot: np.ndarray | None,
                 pos_tol: float, rot_tol: float, max_iter: int, damping: float) -> IKResult:
        q = q.copy()
        lo, hi = self.lower[:self.n_arm], self.upper[:self.n_arm]
        pos_err = rot_err = np.inf
        for it in range(max_iter):
            self._set(q)
            pos, rot = self._tcp_pose()
            e_p = target_pos - pos
            pos_err = float(np.linalg.norm(e_p))
            if target_rot is not None:
                e_r = _rot_error(rot, np.asarray(target_rot, dtype=float))
                rot_err = float(np.linalg.norm(e_r))
                err = np.concatenate([e_p, e_r])
                jac = self._jac_current()
            else:
                rot_err = 0.0
                err = e_p
                jac = self._jac_current()[:3]
            if pos_err < pos_tol and rot_err < rot_tol:
                return IKResult(q, True, pos_err, rot_err, it)
            step = jac.T @ np.linalg.solve(jac @ jac.T + damping ** 2 * np.eye(len(err)), err)
            norm = np.max(np.abs(step))
            if norm > 0.3:
                step *= 0.3 / norm
            q = np.clip(q + step, lo, hi)
        return IKResult(q, pos_err < pos_tol and rot_err < rot_tol, pos_err, rot_err, max_iter)


def _has_site(model: mujoco.MjModel, name: str) -> bool:
    try:
        model.site(name)
        return True
    except KeyError:
        return False


def tool_down_rotation(yaw: float = 0.0) -> np.ndarray:
    """TCP rotation pointing straight down (z = -Z), rotated by yaw about Z.

    yaw 0 is the default arm's natural wrist orientation when reaching along +X, so a
    grasp yaw near the target's azimuth keeps the tool roll joint near the middle of its range.
    """
    c, s = np.cos(yaw), np.sin(yaw)
    rz = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    return rz @ np.diag([-1.0, 1.0, -1.0])
