"""MujocoTwin: the embedded twin backend (CPU, EGL offscreen), pixel-aligned with calibration.

Every camera renders a padded ideal pinhole image that ``comsim_core.camera.Lens`` warps into
the calibrated camera's raw (distorted) view, the same code path the lab images went through.
"""
from __future__ import annotations

import json
import threading

import mujoco
import numpy as np

from comsim_core.camera import Lens
from comsim_core.robot.model import RobotModel
from comsim_twin.backends.mjcf import ROBOT_PREFIX, TwinModel, compose
from comsim_twin.scene import TwinScene

# Armature (kg m^2) of the arm's joints during kinematic steps: so large that gravity, damping
# and contact reactions cannot change the placed velocity within a step. The contacts then see
# the recorded motion; with the real armature a pushed or carried object feels a softer arm.
KINEMATIC_ARMATURE = 1e4


class _Exposure:
    """A MuJoCo camera snapshot (the renderer's scene): drawn by render(), warped by image()."""

    def __init__(self, renderer: mujoco.Renderer, lens: Lens, distort: bool) -> None:
        self._renderer, self._lens, self._distort = renderer, lens, distort
        self._padded: np.ndarray | None = None
        self._image: np.ndarray | None = None
        self._warp = threading.Lock()   # image() may be asked for from two threads

    def render(self) -> None:
        self._padded = self._renderer.render()

    def image(self) -> np.ndarray:
        with self._warp:
            if self._image is None:
                if self._padded is None:
                    raise RuntimeError('render() the exposure before asking for its image')
                padded, self._padded = self._padded, None
                self._image = self._develop(padded)
            return self._image

    def _develop(self, padded: np.ndarray) -> np.ndarray:
        """The padded render -> the camera's image (lens warp, or the ideal pinhole crop)."""
        return self._lens.distort(padded) if self._distort else self._lens.crop(padded).copy()


def _geom_labels(seg: np.ndarray, table: np.ndarray) -> np.ndarray:
    """A segmentation render (ids, types per pixel) -> ``table[geom id]`` per pixel, the
    table's last entry where no geom is seen."""
    ids, types = seg[..., 0], seg[..., 1]
    is_geom = (types == int(mujoco.mjtObj.mjOBJ_GEOM)) & (ids >= 0)
    return table[np.where(is_geom, ids, -1)]


class _ObjectsExposure(_Exposure):
    """A segmentation snapshot of a camera (its own renderer): render() draws the labels,
    image() gives HxW uint8 object ids, 1 + index into ``object_names``, 0 elsewhere (the arm,
    the table and its markers)."""

    def __init__(self, renderer: mujoco.Renderer, lens: Lens, distort: bool,
                 geom_object: np.ndarray) -> None:
        super().__init__(renderer, lens, distort)
        self._geom_object = geom_object

    def _develop(self, padded: np.ndarray) -> np.ndarray:
        labels = _geom_labels(padded, self._geom_object).astype(np.uint8)
        return (self._lens.distort_labels(labels) if self._distort
                else self._lens.crop(labels).copy())


class TwinNotBuiltError(RuntimeError):
    """A MujocoTwin method that needs a world was called before build()."""


class MujocoTwin:
    """TwinBackend on MuJoCo. Joint vector: the robot's arm joints, then 'gripper' (m)."""

    name = 'mujoco'

    def __init__(self, shadows: bool = False):
        self.shadows = shadows
        self.joint_names: list[str] = []
        self.camera_names: list[str] = []
        self.object_names: list[str] = []
        self.marker_names: list[str] = []
        self.timestep = 0.0
        self.robot: RobotModel | None = None
        self.model: mujoco.MjModel | None = None
        self.data: mujoco.MjData | None = None
        self.scene: TwinScene | None = None
        self._twin: TwinModel | None = None
        self._renderers: dict[str, mujoco.Renderer] = {}
        self._label_renderers: dict[str, mujoco.Renderer] = {}   # segmentation, made on demand
        self._stale = False   # physics stepped since the last forward pass

    # ------------------------------------------------------------------ world
    def scale_lights(self, factor: float) -> None:
        """Every light's diffuse intensity at ``factor`` times the built scene's (clipped to
        1), whatever an earlier call set: a scene built again does not compound it."""
        self.model.light_diffuse[:] = np.clip(self._light_diffuse * factor, 0.0, 1.0)

    def build(self, scene: TwinScene) -> None:
        """Compose the world; the same scene again only resets it (renderers are costly)."""
        key = json.dumps(scene.to_dict(), sort_keys=True, default=str)
        if self.model is not None and key == getattr(self, '_scene_key', None):
            mujoco.mj_resetData(self.model, self.data)
            self.model.light_diffuse[:] = self._light_diffuse   # the lights as built
            self.set_joint_positions(self.robot.home)
            return
        self.close()
        self._scene_key = key
        robot = RobotModel.load(scene.robot_model or None)
        arm = [ROBOT_PREFIX + n for n in robot.arm_joint_names]
        grip = [ROBOT_PREFIX + n for n in robot.gripper_joint_names]
        twin = compose(scene, robot.mjcf_path, arm + grip[:1], shadows=self.shadows)
        model = twin.model
        self.robot, self.scene, self._twin, self.model = robot, scene, twin, model
        self.data = mujoco.MjData(model)
        self._light_diffuse = model.light_diffuse.copy()
        self.joint_names = list(robot.joint_names)
        self.camera_names = list(twin.lenses)
        self.object_names = list(twin.object_names)
        self.marker_names = list(twin.marker_names)
        self.timestep = float(model.opt.timestep)
        jids = [model.joint(n).id for n in arm]
        self._qadr = np.array([model.jnt_qposadr[j] for j in jids], dtype=int)
        self._dadr = np.array([model.jnt_dofadr[j] for j in jids], dtype=int)
        self._grip_qadr = [int(model.jnt_qposadr[model.joint(g).id]) for g in grip]
        self._grip_dadr = [int(model.jnt_dofadr[model.joint(g).id]) for g in grip]
        act_of_joint = {int(model.actuator_trnid[a, 0]): a for a in range(model.nu)
                        if model.actuator_trntype[a] == mujoco.mjtTrn.mjTRN_JOINT}
        driven = jids + ([model.joint(grip[0]).id] if grip else [])
        self._act = np.array([act_of_joint[j] for j in driven], dtype=int)
        self._obj = {}
        for name in self.object_names:
            jid = model.joint(f'{name}_free').id
            self._obj[name] = (model.body(name).id, int(model.jnt_qposadr[jid]),
                               int(model.jnt_dofadr[jid]))
        self._geom_label = self._label_table()
        # the same table with the markers unlabelled: what the object snapshots show
        self._geom_object = np.where(self._geom_label <= len(self.object_names),
                                     self._geom_label, 0)
        self._camera_ids = {cam: model.camera(cam).id for cam in twin.lenses}
        for cam, lens in twin.lenses.items():
            self._renderers[cam] = mujoco.Renderer(model, height=lens.render_height,
                                                   width=lens.render_width)
        self.set_joint_positions(robot.home)

    def _label_table(self) -> np.ndarray:
        """geom id -> 1 + index into labelled_names (0 = neither object nor marker); the last
        entry is for 'no geom' (-1)."""
        model = self.model
        table = np.zeros(model.ngeom + 1, dtype=np.uint16)
        index = {self._obj[n][0]: i + 1 for i, n in enumerate(self.object_names)}
        for g in range(model.ngeom):
            table[g] = index.get(int(model.geom_bodyid[g]), 0)
        for j, name in enumerate(self.marker_names):   # world geoms: labelled by geom, not body
            table[model.geom(name).id] = len(self.object_names) + j + 1
        return table

    @property
    def labelled_names(self) -> list[str]:
        """What segmentation labels: the objects, then the table markers."""
        return self.object_names + self.marker_names

    def _need(self) -> tuple[mujoco.MjModel, mujoco.MjData]:
        if self.model is None or self.data is None:
            raise TwinNotBuiltError('MujocoTwin: call build(scene) first')
        return self.model, self.data

    # ------------------------------------------------------------------ arm
    def _check_q(self, q: np.ndarray) -> np.ndarray:
        q = np.asarray(q, dtype=float).reshape(-1)
        if q.size != len(self.joint_names):
            raise ValueError(f'need {len(self.joint_names)} joint values {self.joint_names}, '
                             f'got {q.size}')
        return q

    def set_joint_positions(self, q: np.ndarray, qd: np.ndarray | None = None) -> None:
        """Place the arm at q with joint velocity qd (None: zero), see TwinBackend."""
        model, data = self._need()
        q = self._check_q(q)
        self._place(q, np.zeros_like(q) if qd is None else self._check_q(qd))
        mujoco.mj_forward(model, data)

    def _place(self, q: np.ndarray, qd: np.ndarray) -> None:
        """Arm and gripper joints at q moving at qd; actuators told to hold q."""
        data = self.data
        data.qpos[self._qadr] = q[:-1]
        data.qvel[self._dadr] = qd[:-1]
        data.qpos[self._grip_qadr] = q[-1]
        data.qvel[self._grip_dadr] = qd[-1]
        data.ctrl[self._act] = q[:len(self._act)]   # hold the pose when physics runs

    def step_kinematic(self, q: np.ndarray, qd: np.ndarray) -> None:
        """See TwinBackend; mj_step computes the forward pass, so none is run per placement."""
        model, data = self._need()
        q = np.atleast_2d(np.asarray(q, dtype=float))
        qd = np.atleast_2d(np.asarray(qd, dtype=float))
        if q.shape != qd.shape or q.shape[1] != len(self.joint_names):
            raise ValueError(f'need n x {len(self.joint_names)} positions and velocities '
                             f'{self.joint_names}, got {q.shape} and {qd.shape}')
        armature = model.dof_armature[self._dadr].copy()
        model.dof_armature[self._dadr] = KINEMATIC_ARMATURE
        try:
            for qi, qdi in zip(q, qd):
                self._place(qi, qdi)
                mujoco.mj_step(model, data)
        finally:
            model.dof_armature[self._dadr] = armature
        self._stale = True

    def step_commanded(self, q: np.ndarray) -> None:
        """See TwinBackend: command_positions(q[i]) + step(1) per row, in one call."""
        model, data = self._need()
        q = np.atleast_2d(np.asarray(q, dtype=float))
        if q.shape[1] != len(self.joint_names):
            raise ValueError(f'need n x {len(self.joint_names)} position targets '
                             f'{self.joint_names}, got {q.shape}')
        targets = self.robot.clamp(q)[:, :len(self._act)]
        act = self._act
        for row in targets:
            data.ctrl[act] = row
            mujoco.mj_step(model, data)
        self._stale = True

    def command_positions(self, q: np.ndarray) -> None:
        _, data = self._need()
        q = self.robot.clamp(self._check_q(q))
        data.ctrl[self._act] = q[:len(self._act)]

    def step(self, n: int = 1) -> None:
        model, data = self._need()
        for _ in range(int(n)):
            mujoco.mj_step(model, data)
        self._stale = True

    def _forward(self) -> mujoco.MjData:
        """Data with body poses computed for the current qpos.

        mj_step leaves poses from before its integration; one forward pass before a render or a
        pose read (not after every step) keeps them exact."""
        model, data = self._need()
        if self._stale:
            mujoco.mj_forward(model, data)
            self._stale = False
        return data

    @property
    def time(self) -> float:
        return 0.0 if self.data is None else float(self.data.time)

    def joint_positions(self) -> np.ndarray:
        _, data = self._need()
        grip = data.qpos[self._grip_qadr[0]] if self._grip_qadr else 0.0
        return np.append(data.qpos[self._qadr], grip)

    # ------------------------------------------------------------------ objects
    def _object(self, name: str) -> tuple[int, int, int]:
        if name not in self._obj:
            raise KeyError(f'unknown object {name!r}; scene has {self.object_names}')
        return self._obj[name]

    def set_object_pose(self, name: str, pos, quat=(1.0, 0.0, 0.0, 0.0)) -> None:
        """Place an object (centre pos, quat w x y z), at rest."""
        model, data = self._need()
        _, qa, da = self._object(name)
        quat = np.asarray(quat, dtype=float).reshape(4)
        norm = np.linalg.norm(quat)
        if norm < 1e-9:
            raise ValueError(f'object {name!r}: quaternion {quat.tolist()} has zero norm')
        data.qpos[qa:qa + 3] = np.asarray(pos, dtype=float).reshape(3)
        data.qpos[qa + 3:qa + 7] = quat / norm
        data.qvel[da:da + 6] = 0.0
        mujoco.mj_forward(model, data)

    def object_states(self) -> dict[str, dict]:
        """Pose and velocity of each object; velocities in the base (world) frame."""
        data = self._forward()
        out = {}
        for name, (bid, _, da) in self._obj.items():
            rot = data.xmat[bid].reshape(3, 3)
            out[name] = {'pos': data.xpos[bid].copy(), 'quat': data.xquat[bid].copy(),
                         'lin_vel': data.qvel[da:da + 3].copy(),
                         'ang_vel': rot @ data.qvel[da + 3:da + 6]}
        return out

    # ------------------------------------------------------------------ cameras
    def _renderer(self, camera: str) -> mujoco.Renderer:
        self._need()
        if camera not in self._renderers:
            raise KeyError(f'unknown camera {camera!r}; scene has {self.camera_names}')
        return self._renderers[camera]

    def lens(self, camera: str) -> Lens:
        """The camera's Lens (padded render size, distortion maps), for aligned overlays."""
        self._renderer(camera)
        return self._twin.lenses[camera]

    def render_padded(self, camera: str) -> np.ndarray:
        """The padded ideal pinhole render (before lens distortion)."""
        renderer = self._renderer(camera)
        renderer.update_scene(self._forward(), camera=self._camera_ids[camera])
        return renderer.render()

    def render(self, camera: str, distort: bool = True) -> np.ndarray:
        """HxWx3 uint8 RGB; distort=False gives the calibrated ideal pinhole view."""
        exposure = self.capture(camera, distort)
        exposure.render()
        return exposure.image()

    def capture(self, camera: str, distort: bool = True) -> '_Exposure':
        """Snapshot what ``camera`` sees now (see TwinBackend); CPU only, any thread.

        The snapshot is the renderer's own scene, so a camera has one pending capture at most.
        """
        renderer = self._renderer(camera)
        renderer.update_scene(self._forward(), camera=self._camera_ids[camera])
        return _Exposure(renderer, self._twin.lenses[camera], distort)

    def prepare_objects(self) -> None:
        """Make each camera's segmentation renderer, in the calling thread (the one that will
        draw the snapshots: a GL context belongs to the thread that made it)."""
        self._need()
        for cam, lens in self._twin.lenses.items():
            if cam not in self._label_renderers:
                renderer = mujoco.Renderer(self.model, height=lens.render_height,
                                           width=lens.render_width)
                renderer.enable_segmentation_rendering()
                self._label_renderers[cam] = renderer

    def capture_objects(self, camera: str, distort: bool = True) -> _ObjectsExposure:
        """Snapshot which object each pixel of ``camera`` shows now, like ``capture`` (a
        segmentation renderer of the camera's own, so both snapshots can be pending): the
        object masks a replay writes beside its renders. Any thread once ``prepare_objects``
        has run in the drawing one (here it runs first if it has not)."""
        self._renderer(camera)
        if camera not in self._label_renderers:
            self.prepare_objects()
        renderer = self._label_renderers[camera]
        renderer.update_scene(self._forward(), camera=self._camera_ids[camera])
        return _ObjectsExposure(renderer, self._twin.lenses[camera], distort, self._geom_object)

    def render_labels(self, camera: str, distort: bool = True) -> np.ndarray:
        """HxW uint16: 1 + index into labelled_names per pixel, 0 where none is seen."""
        renderer = self._renderer(camera)
        renderer.enable_segmentation_rendering()
        try:
            renderer.update_scene(self._forward(), camera=self._camera_ids[camera])
            seg = renderer.render()
        finally:
            renderer.disable_segmentation_rendering()
        labels = _geom_labels(seg, self._geom_label).astype(np.uint16)
        lens = self._twin.lenses[camera]
        return lens.distort_labels(labels) if distort else lens.crop(labels).copy()

    def render_segmentation(self, camera: str, distort: bool = True) -> dict[str, np.ndarray]:
        """Boolean visible-pixel mask per object and per table marker (occlusion by the arm and
        by objects included)."""
        labels = self.render_labels(camera, distort)
        return {name: labels == i + 1 for i, name in enumerate(self.labelled_names)}

    def close(self) -> None:
        for renderer in [*self._renderers.values(), *self._label_renderers.values()]:
            renderer.close()
        self._renderers.clear()
        self._label_renderers.clear()
        self._scene_key = None  # the next build composes anew

    def __enter__(self) -> 'MujocoTwin':
        return self

    def __exit__(self, *exc) -> None:
        self.close()
