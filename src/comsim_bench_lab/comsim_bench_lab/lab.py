"""BenchLab: the simulated stand-in for the real lab (arm, table, task objects, two cameras).

Pure Python over MuJoCo (no ROS): the ROS node and the offline tools drive the same class.
The model is rebuilt only when the task or variant changes; resets otherwise reuse it.
"""
from __future__ import annotations

import zlib
from collections import deque
from collections.abc import Iterator, Mapping
from typing import Any

import mujoco
import numpy as np

from comsim_bench_lab.cameras import CameraCalibration, calibration_of
from comsim_bench_lab.config import LabConfig, LabConfigError, ObjectConfig
from comsim_bench_lab.postprocess import SensorModel
from comsim_bench_lab.realism import RealismProfile
from comsim_bench_lab.scene import ROBOT_PREFIX, Scene, build_scene
from comsim_bench_lab.tasks.bench_task import BenchTask
from comsim_core.geometry import yaw_quat
from comsim_core.robot.model import DEFAULT_ARM_PATH, RobotModel
from comsim_core.tasks.state import ObjectState

REGIONS = ('id', 'ood')
TABLE_Z = 0.0
_TRACK_EVERY = 5   # physics steps between task tracking updates
KINEMATIC_ARMATURE = 1e4   # kg m^2 on the arm's joints while it is placed (step_kinematic)


class _DataView(Mapping[str, ObjectState]):
    """The objects' states, read from MjData when a task check asks for one."""

    def __init__(self, model: mujoco.MjModel, data: mujoco.MjData, names: list[str]):
        self.data = data
        self.bid = {n: model.body(n).id for n in names}
        self.dadr = {n: model.jnt_dofadr[model.joint(f'{n}_free').id] for n in names}

    def __getitem__(self, name: str) -> ObjectState:
        b, a = self.bid[name], self.dadr[name]
        d = self.data
        return ObjectState(d.xpos[b].copy(), d.xquat[b].copy(), d.qvel[a:a + 3].copy(),
                           d.qvel[a + 3:a + 6].copy())

    def __iter__(self) -> Iterator[str]:
        return iter(self.bid)

    def __len__(self) -> int:
        return len(self.bid)


class BenchLab:
    def __init__(self, config: LabConfig, realism: RealismProfile | None = None):
        self.config = config
        self.realism = realism
        self.robot_path = config.robot_path or DEFAULT_ARM_PATH
        self.robot = RobotModel.load(config.robot_path, gripper_joints=config.gripper_joints)
        self.joint_names = list(self.robot.joint_names)
        self.camera_names = list(config.cameras)
        self.timestep = config.timestep
        self._tasks = {name: BenchTask(t) for name, t in config.tasks.items()}
        self._scene: Scene | None = None
        self._scene_key: tuple[str, str] | None = None
        self._renderers: dict[str, mujoco.Renderer] = {}
        self._sensors: dict[str, SensorModel] = {}
        self._time_base = 0.0
        self._pending: deque[tuple[float, np.ndarray]] = deque()
        self._latency = (realism.latency_ms / 1000.0) if realism else 0.0
        self.task: BenchTask | None = None
        self.task_name = ''
        self.seed = 0
        self.region = 'id'
        self.variant = 'default'
        self.objects: dict[str, ObjectConfig] = {}
        self._steps = 0
        first = next(iter(self._tasks), None)
        if first is None:
            raise ValueError(f'{config.source}: no tasks defined')
        self.reset(first, 0)

    # ------------------------------------------------------------------ public API
    @property
    def tasks(self) -> dict[str, dict[str, list[str]]]:
        return {n: {'variants': t.variants, 'regions': list(REGIONS)}
                for n, t in self._tasks.items()}

    @property
    def time(self) -> float:
        return self._time_base + float(self.data.time)

    def reset(self, task: str, seed: int, region: str = 'id', variant: str | None = None) -> None:
        if task not in self._tasks:
            raise LabConfigError(f'unknown task {task!r}; allowed: {sorted(self._tasks)}')
        if region not in REGIONS:
            raise LabConfigError(f'unknown region {region!r}; allowed: {list(REGIONS)}')
        task_obj = self._tasks[task]
        variant = 'default' if variant is None else variant
        if variant not in task_obj.variants:
            raise LabConfigError(f'unknown variant {variant!r} for task {task!r}; '
                             f'allowed: {task_obj.variants}')
        self.region, self.variant = region, variant
        self._begin(task, task_obj, task_obj.cfg.objects_for(variant), (task, variant), seed)
        rng = np.random.default_rng(seed)
        layout = task_obj.sample(rng, task_obj.cfg.regions[region], self.objects)
        poses = {name: ([place.xy[0], place.xy[1],
                         TABLE_Z + self.objects[name].half_height + 1e-4], yaw_quat(place.yaw))
                 for name, place in layout.items()}
        self._place(poses, self.robot.home)

    def set_layout(self, task: str, objects: dict[str, ObjectConfig],
                   poses: dict[str, tuple[Any, Any]], target: dict[str, Any] | None = None,
                   q: np.ndarray | None = None, seed: int = 0) -> None:
        """Start an episode from an explicit layout instead of one sampled from a seed.

        ``objects`` replaces the task's objects (shapes, sizes, colours) and may add others
        (distractors); every object of the task config must be among them. ``poses`` gives each
        object's initial centre (x, y, z) and quaternion (w, x, y, z); ``target`` the task
        target (e.g. move_card's ``zone_center``, which also places the zone marker; None keeps
        the task's last one); ``q`` the arm's joint positions (default home). The model is
        rebuilt whenever the objects differ from the current ones.
        """
        if task not in self._tasks:
            raise LabConfigError(f'unknown task {task!r}; allowed: {sorted(self._tasks)}')
        task_obj = self._tasks[task]
        missing = [n for n in task_obj.cfg.objects if n not in objects]
        unplaced = [n for n in objects if n not in poses]
        if missing or unplaced:
            raise ValueError(f'layout for {task!r}: task objects {missing} missing, objects '
                             f'{unplaced} without a pose')
        key = ('layout', task, tuple((n, o.shape, tuple(np.round(o.size, 9)),
                                      tuple(np.round(o.color, 9)),
                                      None if o.neck is None else tuple(o.neck))
                                     for n, o in sorted(objects.items())))
        self.region, self.variant = 'layout', 'layout'
        if target is not None:
            task_obj.target = dict(target)
        try:
            task_obj.marker_poses()
        except KeyError as exc:
            raise ValueError(f'layout for {task!r}: the target needs {exc.args[0]!r} to place the '
                             f'task markers; got target {task_obj.target}') from None
        self._begin(task, task_obj, dict(objects), key, seed)
        self._place({n: poses[n] for n in objects},
                    self.robot.home if q is None else np.asarray(q, dtype=float))

    def step_kinematic(self, q: np.ndarray, qd: np.ndarray,
                       grip_ctrl: np.ndarray | None = None) -> None:
        """One physics step per row: the arm placed at ``q`` moving at ``qd`` (both
        (n, joints)), the objects following physics; the position actuators hold ``q``.

        With ``grip_ctrl`` (n,) the gripper is not placed: its actuator drives it towards those
        targets, so a grasp squeezes with the actuator's force instead of a placed finger pose
        (a placed finger at the contact surface holds nothing). During these steps the arm's
        joints get a huge armature, so gravity, damping and contact reactions cannot change its
        velocity within a step: what the contacts see is the placed motion; without it a carried
        object creeps out of the grasp.
        """
        q, qd = np.atleast_2d(np.asarray(q, float)), np.atleast_2d(np.asarray(qd, float))
        if q.shape != qd.shape or q.shape[1] != len(self.joint_names):
            raise ValueError(f'need n x {len(self.joint_names)} positions and velocities '
                             f'{self.joint_names}, got {q.shape} and {qd.shape}')
        if grip_ctrl is not None:
            grip_ctrl = np.asarray(grip_ctrl, float).reshape(-1)
            if grip_ctrl.size != len(q):
                raise ValueError(f'grip_ctrl needs {len(q)} values, got {grip_ctrl.size}')
        model, data = self.model, self.data
        arm_q, arm_d = self._qadr[:-1], self._dadr[:-1]
        armature = model.dof_armature[arm_d].copy()
        model.dof_armature[arm_d] = KINEMATIC_ARMATURE
        try:
            self._kinematic_steps(q, qd, grip_ctrl, arm_q, arm_d)
        finally:
            model.dof_armature[arm_d] = armature
        mujoco.mj_forward(model, data)

    def _kinematic_steps(self, q: np.ndarray, qd: np.ndarray, grip_ctrl: np.ndarray | None,
                         arm_q: np.ndarray, arm_d: np.ndarray) -> None:
        model, data, task = self.model, self.data, self.task
        for i, (qi, qdi) in enumerate(zip(q, qd)):
            data.qpos[arm_q] = qi[:-1]
            data.qvel[arm_d] = qdi[:-1]
            if grip_ctrl is None:
                data.qpos[self._grip_qadr] = qi[-1]
                data.qvel[self._grip_dadr] = qdi[-1]
                data.ctrl[self._act] = qi
            else:
                data.ctrl[self._act] = np.append(qi[:-1], grip_ctrl[i])
            mujoco.mj_step(model, data)
            self._steps += 1
            if self._steps % _TRACK_EVERY == 0:
                task.update(self._view, TABLE_Z)

    def command_positions(self, q: np.ndarray) -> None:
        q = np.asarray(q, dtype=float).reshape(-1)
        if q.size != len(self.joint_names):
            raise ValueError(f'command needs {len(self.joint_names)} values {self.joint_names}, '
                             f'got {q.size}')
        q = self.robot.clamp(q)
        if self._latency > 0:
            self._pending.append((float(self.data.time) + self._latency, q))
        else:
            self._apply_ctrl(q)

    def step(self, n: int = 1) -> None:
        model, data, task = self.model, self.data, self.task
        for _ in range(int(n)):
            while self._pending and self._pending[0][0] <= data.time + 1e-9:
                self._apply_ctrl(self._pending.popleft()[1])
            mujoco.mj_step(model, data)
            self._steps += 1
            if self._steps % _TRACK_EVERY == 0:
                task.update(self._view, TABLE_Z)

    def joint_state(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        d = self.data
        return (d.qpos[self._qadr].copy(), d.qvel[self._dadr].copy(),
                d.qfrc_actuator[self._dadr].copy())

    def render(self, camera: str) -> np.ndarray:
        renderer = self._renderer(camera)
        realistic = self.realism is not None
        self._scene.styles.apply(self.model, realistic)
        renderer.update_scene(self.data, camera=camera)
        padded = renderer.render()
        lens = self._scene.lenses[camera]
        if not realistic:
            return lens.crop(padded).copy()
        image = lens.distort(padded) if self.realism.distortion else lens.crop(padded).copy()
        return self._sensors[camera].apply(image)

    def render_plain(self, camera: str) -> np.ndarray:
        renderer = self._renderer(camera)
        self._scene.styles.apply(self.model, False)
        renderer.update_scene(self.data, camera=camera)
        return self._scene.lenses[camera].crop(renderer.render()).copy()

    def render_geom_ids(self, camera: str) -> np.ndarray:
        """(H, W) int: the geom id seen at each pixel (-1: none), through the same lens path as
        ``render`` (distorted when the realism profile distorts): ground-truth segmentation."""
        renderer = self._renderer(camera)
        renderer.enable_segmentation_rendering()
        try:
            renderer.update_scene(self.data, camera=camera)
            seg = renderer.render()
        finally:
            renderer.disable_segmentation_rendering()
        # as uint16 id + 1 (0: none) so the nearest-neighbour lens warp can carry it
        ids = np.where(seg[..., 1] == int(mujoco.mjtObj.mjOBJ_GEOM), seg[..., 0] + 1, 0)
        ids = ids.astype(np.uint16)
        lens = self._scene.lenses[camera]
        distort = self.realism is not None and self.realism.distortion
        ids = lens.distort_labels(ids) if distort else lens.crop(ids)
        return ids.astype(np.int32) - 1

    def reseed_sensors(self, seed: int) -> None:
        """Restart every camera's sensor noise from ``seed`` (with the camera's name), so what
        a rollout sees does not depend on what this process rendered before it."""
        for cam, sensor in self._sensors.items():
            sensor.rng = np.random.default_rng([zlib.crc32(cam.encode()), int(seed)])

    def camera_info(self, camera: str) -> CameraCalibration:
        if camera not in self.config.cameras:
            raise KeyError(f'unknown camera {camera!r}; allowed: {self.camera_names}')
        return calibration_of(self.config.cameras[camera])

    def task_state(self) -> dict[str, Any]:
        objects = {}
        for name, obj in self.objects.items():
            state = self._view[name]
            entry = {'pos': state.pos.tolist(), 'quat': state.quat.tolist(), 'shape': obj.shape,
                     'size': [float(s) for s in obj.size], 'color': [float(c) for c in obj.color]}
            if obj.neck is not None:
                entry['neck'] = [float(v) for v in obj.neck]
            objects[name] = entry
        ok, _ = self.check_success()
        return {'task': self.task_name, 'seed': self.seed, 'region': self.region,
                'variant': self.variant, 'table_z': TABLE_Z, 'objects': objects,
                'target': _jsonable(self.task.target), 'success': bool(ok)}

    def check_success(self) -> tuple[bool, str]:
        return self.task.check_success(self._view, self.objects, TABLE_Z)

    def close(self) -> None:
        for renderer in self._renderers.values():
            renderer.close()
        self._renderers.clear()

    # ------------------------------------------------------------------ internals
    def _begin(self, task: str, task_obj: BenchTask, objects: dict[str, ObjectConfig],
               key: tuple, seed: int) -> None:
        """Start an episode: keep the clock running, (re)build the model when ``key`` changes."""
        if self._scene is not None:
            self._time_base += float(self.data.time)
        self.task, self.task_name, self.seed = task_obj, task, int(seed)
        self.objects = objects
        if self._scene_key != key:
            self._build(task_obj)
            self._scene_key = key
        mujoco.mj_resetData(self.model, self.data)

    def _place(self, poses: dict[str, tuple[Any, Any]], q: np.ndarray) -> None:
        """Objects at their poses, markers where the task's target says, the arm at ``q``."""
        model, data = self.model, self.data
        for name, (pos, quat) in poses.items():
            adr = model.jnt_qposadr[model.joint(f'{name}_free').id]
            data.qpos[adr:adr + 3] = np.asarray(pos, dtype=float)
            data.qpos[adr + 3:adr + 7] = np.asarray(quat, dtype=float)
        for name, (x, y, yaw) in self.task.marker_poses().items():
            gid = model.geom(name).id
            model.geom_pos[gid, :2] = [x, y]
            model.geom_quat[gid] = yaw_quat(yaw)
        self._set_robot(q)
        self._pending.clear()
        self._apply_ctrl(q)
        mujoco.mj_forward(model, data)
        self.task.reset_tracking()
        self._steps = 0
        self._view = _DataView(model, data, list(self.objects))

    def _build(self, task: BenchTask) -> None:
        self.close()
        scene = build_scene(self.config, self.objects, task.markers(), self.realism,
                            self.robot_path)
        model = scene.model
        if self.realism is not None:
            model.geom_friction[:, 0] *= self.realism.friction_scale
            model.dof_damping[:] *= self.realism.damping_scale
        self._scene, self.model, self.data = scene, model, mujoco.MjData(model)
        names = [ROBOT_PREFIX + n for n in self.robot.arm_joint_names] + \
                [ROBOT_PREFIX + self.robot.gripper_joint_names[0]]
        jids = [model.joint(n).id for n in names]
        self._qadr = np.array([model.jnt_qposadr[j] for j in jids])
        self._dadr = np.array([model.jnt_dofadr[j] for j in jids])
        self._grip_qadr = [model.jnt_qposadr[model.joint(ROBOT_PREFIX + g).id]
                           for g in self.robot.gripper_joint_names]
        self._grip_dadr = [model.jnt_dofadr[model.joint(ROBOT_PREFIX + g).id]
                           for g in self.robot.gripper_joint_names]
        act_of_joint = {int(model.actuator_trnid[a, 0]): a for a in range(model.nu)
                        if model.actuator_trntype[a] == mujoco.mjtTrn.mjTRN_JOINT}
        missing = [n for n, j in zip(names, jids) if j not in act_of_joint]
        if missing:
            raise ValueError(f'{self.robot_path}: no position actuator for joints {missing}')
        self._act = np.array([act_of_joint[j] for j in jids])
        for cam in self.camera_names:
            lens = scene.lenses[cam]
            self._renderers[cam] = mujoco.Renderer(model, height=lens.render_height,
                                                   width=lens.render_width)
            if self.realism is not None:
                c = self.config.cameras[cam]
                self._sensors[cam] = SensorModel(self.realism, c.width, c.height,
                                                 seed=zlib.crc32(cam.encode()))

    def _renderer(self, camera: str) -> mujoco.Renderer:
        if camera not in self._renderers:
            raise KeyError(f'unknown camera {camera!r}; allowed: {self.camera_names}')
        return self._renderers[camera]

    def _set_robot(self, q: np.ndarray) -> None:
        self.data.qpos[self._qadr[:-1]] = q[:-1]
        for adr in self._grip_qadr:
            self.data.qpos[adr] = q[-1]

    def _apply_ctrl(self, q: np.ndarray) -> None:
        self.data.ctrl[self._act] = q


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (np.floating, np.integer)):
        return value.item()
    return value
