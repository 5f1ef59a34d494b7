"""IsaacTwin: the twin on NVIDIA Isaac Sim (RTX GPUs only), same protocol as MujocoTwin.

Isaac Sim is imported lazily inside methods: importing this module never needs it, and on a
machine without it every entry point raises ``BackendUnavailableError`` with what to do.
Written against Isaac Sim 5.x (``isaacsim.core.prims.SingleArticulation``,
``isaacsim.sensors.camera.Camera``) with the 6.x ``isaacsim.core.experimental.prims``
articulation used where present. ``SimulationApp`` must start before any omni/pxr import.

Not exercised here (no RTX GPU on our CI machines: H100/H200 lack RT cores, which Isaac Sim
requires); the MuJoCo backend is the tested reference.
"""
from __future__ import annotations

import importlib.util
from typing import Any

import numpy as np

from comsim_core.camera import Lens
from comsim_core.robot.model import RobotModel
from comsim_twin.backends.base import BackendUnavailableError, ReadyExposure
from comsim_twin.scene import TwinScene

UNAVAILABLE = ('Isaac Sim is not installed; it needs an RTX GPU (RT cores, >= 16 GB; '
               'A100/H100/H200 are not supported), Python 3.11 (5.x) or 3.12 (6.x) and '
               "NVIDIA's package index. Use backend: mujoco")
WORLD = '/World'
ROBOT_PRIM = '/World/robot'
PHYSICS_DT = 0.002
_OPENCV_TO_USD_CAMERA = np.diag([1.0, -1.0, -1.0])   # USD cameras look along -Z, +Y up


def isaac_available() -> bool:
    """Whether an Isaac Sim install is importable (without starting it)."""
    return importlib.util.find_spec('isaacsim') is not None


def _require_isaac() -> None:
    if not isaac_available():
        raise BackendUnavailableError(UNAVAILABLE)


class IsaacTwin:
    """TwinBackend on Isaac Sim. One SimulationApp per process (Isaac's own rule)."""

    name = 'isaac'
    _app: Any = None   # the process-wide SimulationApp

    def __init__(self, headless: bool = True, renderer: str = 'RaytracedLighting'):
        _require_isaac()
        self.headless, self.renderer = headless, renderer
        self.joint_names: list[str] = []
        self.camera_names: list[str] = []
        self.object_names: list[str] = []
        self.timestep = PHYSICS_DT
        self._world = None
        self._robot = None
        self._cameras: dict[str, Any] = {}
        self._lenses: dict[str, Lens] = {}
        self._objects: dict[str, Any] = {}
        self._dof_index: list[int] = []
        self._grip_index: list[int] = []

    # ------------------------------------------------------------------ start-up
    def _start(self) -> None:
        if IsaacTwin._app is None:
            from isaacsim import SimulationApp  # must precede every omni/pxr import
            IsaacTwin._app = SimulationApp({'headless': self.headless,
                                            'renderer': self.renderer})

    def build(self, scene: TwinScene) -> None:
        _require_isaac()
        self._start()
        from isaacsim.core.api import World
        self.close()
        self._world = World(stage_units_in_meters=1.0, physics_dt=PHYSICS_DT,
                            rendering_dt=PHYSICS_DT)
        robot = RobotModel.load(scene.robot_model or None)
        self._robot_model = robot
        self.joint_names = list(robot.joint_names)
        self._add_table(scene)
        self._add_robot(robot)
        for obj in scene.objects.values():
            self._add_object(obj)
        for cam in scene.cameras.values():
            self._add_camera(cam)
        self.object_names = list(scene.objects)
        self.camera_names = list(scene.cameras)
        self._world.reset()
        self._bind_dofs(robot)
        self.set_joint_positions(robot.home)

    def _add_table(self, scene: TwinScene) -> None:
        from isaacsim.core.api.objects import FixedCuboid
        sx, sy = scene.table_size
        FixedCuboid(f'{WORLD}/table', name='table', scale=np.array([2 * sx, 2 * sy, 0.04]),
                    position=np.array([scene.table_center[0], scene.table_center[1], -0.02]),
                    color=np.asarray(scene.table_color, float))

    def _robot_urdf(self, robot: RobotModel) -> str:
        if robot.mjcf_path.lower().endswith('.urdf'):
            return robot.mjcf_path
        raise BackendUnavailableError(
            f'IsaacTwin imports robots from URDF; {robot.mjcf_path} is MJCF. Give the scene a '
            'URDF robot_model (or import the MJCF with isaacsim.asset.importer.mjcf first)')

    def _add_robot(self, robot: RobotModel) -> None:
        import omni.kit.commands
        urdf = self._robot_urdf(robot)
        _, config = omni.kit.commands.execute('URDFCreateImportConfig')
        config.merge_fixed_joints = False
        config.fix_base = True
        config.make_default_prim = False
        config.default_drive_type = 1   # position drive, like the MuJoCo twin's actuators
        omni.kit.commands.execute('URDFParseAndImportFile', urdf_path=urdf,
                                  import_config=config, dest_path='', get_articulation_root=True)
        try:   # 6.x
            from isaacsim.core.experimental.prims import Articulation
            self._robot = Articulation(ROBOT_PRIM)
            self._api = 6
        except ImportError:   # 5.x
            from isaacsim.core.prims import SingleArticulation
            self._robot = SingleArticulation(ROBOT_PRIM, name='robot')
            self._world.scene.add(self._robot)
            self._api = 5

    def _add_object(self, obj) -> None:
        from isaacsim.core.api.objects import DynamicCuboid, DynamicCylinder
        path = f'{WORLD}/{obj.name}'
        common = dict(name=obj.name, position=np.asarray(obj.pos, float),
                      orientation=np.asarray(obj.quat, float),
                      color=np.asarray(obj.color, float), mass=obj.mass)
        if obj.shape == 'box':
            prim = DynamicCuboid(path, scale=2 * np.asarray(obj.size[:3], float), **common)
        else:   # cylinder; a bottle's neck is visual detail below Isaac's contact resolution
            prim = DynamicCylinder(path, radius=obj.size[0], height=2 * obj.size[1], **common)
        self._objects[obj.name] = self._world.scene.add(prim)

    def _add_camera(self, cam) -> None:
        from isaacsim.core.utils.rotations import rot_matrix_to_quat
        from isaacsim.sensors.camera import Camera
        lens = Lens(cam.K, cam.D, cam.width, cam.height)
        T = np.asarray(cam.T_base_camera, float)
        quat = rot_matrix_to_quat(T[:3, :3] @ _OPENCV_TO_USD_CAMERA)
        camera = Camera(f'{WORLD}/cameras/{cam.name}', name=cam.name,
                        resolution=(lens.render_width, lens.render_height),
                        position=T[:3, 3], orientation=quat)
        camera.initialize()
        K = lens.padded_K
        # ideal pinhole into a padded frame; distortion is applied by Lens, as in MujocoTwin
        camera.set_opencv_pinhole_properties(cx=K[0, 2], cy=K[1, 2], fx=K[0, 0], fy=K[1, 1],
                                             pinhole=[0.0] * 12)
        camera.add_instance_id_segmentation_to_frame()
        self._cameras[cam.name], self._lenses[cam.name] = camera, lens

    def _bind_dofs(self, robot: RobotModel) -> None:
        names = list(self._robot.dof_names)
        missing = [n for n in robot.arm_joint_names + robot.gripper_joint_names if n not in names]
        if missing:
            raise ValueError(f'URDF articulation lacks joints {missing}; it has {names}')
        self._dof_index = [names.index(n) for n in robot.arm_joint_names]
        self._grip_index = [names.index(n) for n in robot.gripper_joint_names]

    # ------------------------------------------------------------------ arm
    def _full(self, q: np.ndarray) -> tuple[np.ndarray, list[int]]:
        q = np.asarray(q, dtype=float).reshape(-1)
        if q.size != len(self.joint_names):
            raise ValueError(f'need {len(self.joint_names)} joint values {self.joint_names}, '
                             f'got {q.size}')
        values = np.append(q[:-1], [q[-1]] * len(self._grip_index))
        return values, self._dof_index + self._grip_index

    def set_joint_positions(self, q: np.ndarray, qd: np.ndarray | None = None) -> None:
        values, idx = self._full(q)
        vel = np.zeros_like(values) if qd is None else self._full(qd)[0]
        if self._api == 6:
            self._robot.set_dof_positions(values, dof_indices=idx)
            self._robot.set_dof_velocities(vel, dof_indices=idx)
            self._robot.set_dof_position_targets(values, dof_indices=idx)
        else:
            self._robot.set_joint_positions(values, joint_indices=np.array(idx))
            self._robot.set_joint_velocities(vel, joint_indices=np.array(idx))
            self._apply_targets(values, idx)

    def step_kinematic(self, q: np.ndarray, qd: np.ndarray) -> None:
        for qi, qdi in zip(np.atleast_2d(q), np.atleast_2d(qd)):
            self.set_joint_positions(qi, qdi)
            self.step(1)

    def step_commanded(self, q: np.ndarray) -> None:
        for qi in np.atleast_2d(q):
            self.command_positions(qi)
            self.step(1)

    def _apply_targets(self, values: np.ndarray, idx: list[int]) -> None:
        from isaacsim.core.utils.types import ArticulationAction
        self._robot.apply_action(ArticulationAction(joint_positions=values,
                                                    joint_indices=np.array(idx)))

    def command_positions(self, q: np.ndarray) -> None:
        values, idx = self._full(self._robot_model.clamp(np.asarray(q, float)))
        if self._api == 6:
            self._robot.set_dof_position_targets(values, dof_indices=idx)
        else:
            self._apply_targets(values, idx)

    def step(self, n: int = 1) -> None:
        for i in range(int(n)):
            self._world.step(render=(i == n - 1))

    @property
    def time(self) -> float:
        return 0.0 if self._world is None else float(self._world.current_time)

    def joint_positions(self) -> np.ndarray:
        if self._api == 6:
            q = np.asarray(self._robot.get_dof_positions().numpy()).reshape(-1)
        else:
            q = np.asarray(self._robot.get_joint_positions()).reshape(-1)
        grip = q[self._grip_index[0]] if self._grip_index else 0.0
        return np.append(q[self._dof_index], grip)

    # ------------------------------------------------------------------ objects
    def set_object_pose(self, name: str, pos, quat=(1.0, 0.0, 0.0, 0.0)) -> None:
        prim = self._objects[name]
        prim.set_world_pose(position=np.asarray(pos, float), orientation=np.asarray(quat, float))
        prim.set_linear_velocity(np.zeros(3))
        prim.set_angular_velocity(np.zeros(3))

    def object_states(self) -> dict[str, dict]:
        out = {}
        for name, prim in self._objects.items():
            pos, quat = prim.get_world_pose()
            out[name] = {'pos': np.asarray(pos), 'quat': np.asarray(quat),
                         'lin_vel': np.asarray(prim.get_linear_velocity()),
                         'ang_vel': np.asarray(prim.get_angular_velocity())}
        return out

    # ------------------------------------------------------------------ cameras
    def render(self, camera: str, distort: bool = True) -> np.ndarray:
        self._world.render()
        padded = np.asarray(self._cameras[camera].get_rgb(), dtype=np.uint8)[..., :3]
        lens = self._lenses[camera]
        return lens.distort(padded) if distort else lens.crop(padded).copy()

    def capture(self, camera: str, distort: bool = True) -> ReadyExposure:
        return ReadyExposure(self.render(camera, distort))   # no cheap snapshot: render now

    def render_segmentation(self, camera: str, distort: bool = True) -> dict[str, np.ndarray]:
        self._world.render()
        frame = self._cameras[camera].get_current_frame()
        seg = frame['instance_id_segmentation']
        ids, info = np.asarray(seg['data']), seg['info']['idToLabels']
        labels = np.zeros(ids.shape[:2], dtype=np.uint16)
        for i, name in enumerate(self.object_names):
            for key, path in info.items():
                if str(path).startswith(f'{WORLD}/{name}'):
                    labels[ids == int(key)] = i + 1
        lens = self._lenses[camera]
        labels = lens.distort_labels(labels) if distort else lens.crop(labels).copy()
        return {name: labels == i + 1 for i, name in enumerate(self.object_names)}

    def close(self) -> None:
        if self._world is not None:
            self._world.clear()
            self._world = None
        self._cameras.clear()
        self._objects.clear()
