"""The bench lab's calibration session: a physical chessboard shown to the lab's cameras.

What a person does in the real lab: hold the board at many poses in front of each camera (for
intrinsics), then lay it flat on the table against the jig at the known placements of
config/twin/calibration.yaml (for extrinsics). The board is real geometry (black squares on a
white plate, so every corner is exactly where the board definition says) and the images go
through the realism profile (lens distortion with the true D, exposure, vignetting, blur, noise).

Output: one rosbag2 episode (/cameras/<cam>/image_raw, rgb8) + episode.yaml saying which image
shows what. The bench lab reads the public calibration setup; the twin never reads the lab's.

    comsim-calibration-capture --out output/calibration/session_0 --views 30 --seed 0
"""
from __future__ import annotations

import argparse
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import cv2
import mujoco
import numpy as np

from comsim_bench_lab.cameras import LensModel, calibration_of
from comsim_bench_lab.config import CameraConfig, LabConfig, LabConfigError, LabConfigKeyError
from comsim_bench_lab.postprocess import SensorModel
from comsim_bench_lab.realism import RealismProfile
from comsim_bench_lab.scene import (
    ROBOT_PREFIX,
    _styles,
    add_cameras,
    add_lights,
    add_robot,
    lab_spec,
)
from comsim_core.config import load_config
from comsim_core.episodes.encode import rgb8_image_cdr
from comsim_core.episodes.sidecar import write_sidecar
from comsim_core.episodes.topics import TopicSpec
from comsim_core.episodes.writer import EpisodeBagWriter
from comsim_core.errors import cli_main
from comsim_core.paths import resolve_config_path
from comsim_core.robot.model import DEFAULT_ARM_PATH, RobotModel

BOARD_BODY = 'calibration_board'
IMAGE_TYPE = 'sensor_msgs/msg/Image'
FRAME_PERIOD_NS = 100_000_000       # 10 Hz stamps: the capture is a sequence of still shots
_SQUARE_HALF_T = 1e-4                # black squares: 0.2 mm thick, face 0.1 mm in front of z=0


@dataclass(frozen=True)
class Board:
    """The physical board, read from the public setup's `board:` mapping with the lab's own
    schema: the lab is a separate party from the twin and imports none of its code."""

    squares_x: int
    squares_y: int
    square_size: float
    thickness: float = 0.0
    margin: float = 0.0
    name: str = 'chessboard'

    def corners(self) -> np.ndarray:
        """(N, 3) inner corners in the board frame, row-major (the twin's order)."""
        ys, xs = np.mgrid[0:self.squares_y - 1, 0:self.squares_x - 1]
        return np.stack([xs.ravel(), ys.ravel(), np.zeros(xs.size)], 1) * self.square_size

    @property
    def centre(self) -> np.ndarray:
        s = self.square_size
        return np.array([(self.squares_x - 2) * s / 2, (self.squares_y - 2) * s / 2, 0.0])


@dataclass(frozen=True)
class PlacementEntry:
    """Where the board lies flat on the table: first inner corner (x, y), yaw of its x axis."""

    name: str
    xy: tuple[float, float]
    yaw: float


@dataclass(frozen=True)
class SetupFile:
    """config/twin/calibration.yaml as the lab reads it (strict: a typo fails at load)."""

    board: Board
    table_top_z: float = 0.0
    placements: list[PlacementEntry] = field(default_factory=list)


@dataclass(frozen=True)
class Placement:
    name: str
    T_base_board: np.ndarray


def load_setup(path: str | Path) -> tuple[Board, list[Placement]]:
    """Board and table placements from the public calibration setup (calibration.yaml)."""
    file = load_config(path, SetupFile, what='calibration setup', error=LabConfigError,
                       missing_error=LabConfigKeyError)
    z = file.table_top_z + file.board.thickness
    return file.board, [Placement(p.name, flat_pose(*p.xy, z, p.yaw)) for p in file.placements]


def flat_pose(x: float, y: float, z: float, yaw: float) -> np.ndarray:
    """Board lying printed face up: x axis at yaw about +z, z axis down into the table."""
    c, s = np.cos(yaw), np.sin(yaw)
    T = np.eye(4)
    T[:3, :3] = np.column_stack([[c, s, 0.0], [s, -c, 0.0], [0.0, 0.0, -1.0]])
    T[:3, 3] = [x, y, z]
    return T


# ---------------------------------------------------------------------------- scene
def _add_board(spec: mujoco.MjSpec, board: Board) -> None:
    body = spec.worldbody.add_body()
    body.name = BOARD_BODY
    body.mocap = True
    for name, rgba in (('board_white', [0.93, 0.93, 0.91, 1]),
                       ('board_black', [0.04, 0.04, 0.05, 1])):
        mat = spec.add_material()
        mat.name = name
        mat.rgba = rgba
        mat.specular = 0.05
        mat.shininess = 0.1
    s, m, t = board.square_size, board.margin, board.thickness
    x0, x1 = -s - m, (board.squares_x - 1) * s + m
    y0, y1 = -s - m, (board.squares_y - 1) * s + m
    plate_t = max(t, 1e-3) - 3 * _SQUARE_HALF_T
    geoms = [('board_plate', 'board_white', [(x0 + x1) / 2, (y0 + y1) / 2,
                                             3 * _SQUARE_HALF_T + plate_t / 2],
              [(x1 - x0) / 2, (y1 - y0) / 2, plate_t / 2])]
    for r in range(board.squares_y):
        for c in range(board.squares_x):
            if (r + c) % 2 == 0:
                geoms.append((f'board_sq_{r}_{c}', 'board_black',
                              [(c - 0.5) * s, (r - 0.5) * s, 0.0], [s / 2, s / 2, _SQUARE_HALF_T]))
    for name, mat, pos, size in geoms:
        g = body.add_geom()
        g.name, g.type, g.pos, g.size = name, mujoco.mjtGeom.mjGEOM_BOX, pos, size
        g.material = mat
        g.contype = g.conaffinity = 0


def build_rig_scene(cfg: LabConfig, realism: RealismProfile | None, robot_path: str,
                    board: Board) -> tuple[mujoco.MjModel, dict[str, LensModel]]:
    """The lab (scene.py's room, arm, cameras and lights, no objects) plus the board."""
    spec = lab_spec(cfg, realism, 'comsim_calibration_rig')
    add_robot(spec, robot_path)
    lenses = add_cameras(spec, cfg)
    add_lights(spec, cfg, realism)
    _add_board(spec, board)        # after the realism materials: the print is matte
    model = spec.compile()
    _styles(model, realism, len(cfg.lights)).apply(model, realism is not None)
    return model, lenses


# ---------------------------------------------------------------------------- poses
def _rot(axis: str, angle: float) -> np.ndarray:
    c, s = np.cos(angle), np.sin(angle)
    return {'x': np.array([[1, 0, 0], [0, c, -s], [0, s, c]]),
            'y': np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]]),
            'z': np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])}[axis]


def corners_in_view(cam: CameraConfig, board: Board, T_cam_board: np.ndarray,
                    margin_px: float) -> bool:
    """Whether every corner (and one square around) projects inside the image, in front."""
    s = board.square_size
    outline = board.centre + np.array([[x, y, 0.0] for x in (-1, 1) for y in (-1, 1)]) * \
        (board.centre + [s, s, 0.0])
    pts = np.vstack([board.corners(), outline])
    cam_pts = pts @ T_cam_board[:3, :3].T + T_cam_board[:3, 3]
    if np.any(cam_pts[:, 2] < 0.1):
        return False
    uv, _ = cv2.projectPoints(cam_pts, np.zeros(3), np.zeros(3), cam.K, cam.distortion)
    uv = uv.reshape(-1, 2)
    return bool(np.all((uv >= margin_px) & (uv <= [cam.width - 1 - margin_px,
                                                   cam.height - 1 - margin_px])))


def sample_held_pose(cam: CameraConfig, board: Board, rng: np.random.Generator,
                     distance: tuple[float, float] = (0.38, 0.75),
                     max_tilt: float = np.radians(40), tries: int = 500) -> np.ndarray:
    """T_cam_board of a board held in front of the camera, filling part of the view, tilted."""
    for _ in range(tries):
        d = rng.uniform(*distance)
        u = rng.uniform(0.2, 0.8) * cam.width
        v = rng.uniform(0.2, 0.8) * cam.height
        ray = np.array([(u - cam.cx) / cam.fx, (v - cam.cy) / cam.fy, 1.0])
        R = (_rot('z', rng.uniform(-0.35, 0.35)) @ _rot('x', rng.uniform(-max_tilt, max_tilt))
             @ _rot('y', rng.uniform(-max_tilt, max_tilt)))
        T = np.eye(4)
        T[:3, :3] = R
        T[:3, 3] = ray / np.linalg.norm(ray) * d - R @ board.centre
        if corners_in_view(cam, board, T, margin_px=6.0):
            return T
    raise RuntimeError(f'camera {cam.name}: no board pose in view after {tries} tries')


# ---------------------------------------------------------------------------- capture
class _Rig:
    def __init__(self, cfg: LabConfig, realism: RealismProfile | None, board: Board, seed: int):
        robot_path = cfg.robot_path or DEFAULT_ARM_PATH
        robot = RobotModel.load(cfg.robot_path, gripper_joints=cfg.gripper_joints)
        self.cfg, self.realism = cfg, realism
        self.model, self.lenses = build_rig_scene(cfg, realism, robot_path, board)
        self.data = mujoco.MjData(self.model)
        parked = robot.home.copy()
        parked[0] += np.pi          # arm swung round behind its base, out of the cameras' view
        for name, q in zip(robot.arm_joint_names, parked[:-1]):
            self.data.qpos[self.model.jnt_qposadr[self.model.joint(ROBOT_PREFIX + name).id]] = q
        for g in robot.gripper_joint_names:
            self.data.qpos[self.model.jnt_qposadr[self.model.joint(ROBOT_PREFIX + g).id]] = \
                robot.home[-1]
        self.mocap = self.model.body(BOARD_BODY).mocapid[0]
        self.renderers = {n: mujoco.Renderer(self.model, ln.render_height, ln.render_width)
                          for n, ln in self.lenses.items()}
        self.sensors = {n: SensorModel(realism, c.width, c.height,
                                       seed=zlib.crc32(f'{n}/{seed}'.encode()))
                        for n, c in cfg.cameras.items()} if realism else {}

    def shoot(self, camera: str, T_base_board: np.ndarray) -> np.ndarray:
        quat = np.zeros(4)
        mujoco.mju_mat2Quat(quat, np.ascontiguousarray(T_base_board[:3, :3]).reshape(-1))
        self.data.mocap_pos[self.mocap] = T_base_board[:3, 3]
        self.data.mocap_quat[self.mocap] = quat
        mujoco.mj_forward(self.model, self.data)
        renderer = self.renderers[camera]
        renderer.update_scene(self.data, camera=camera)
        padded = renderer.render()
        lens = self.lenses[camera]
        if self.realism is None:
            return lens.crop(padded).copy()
        image = lens.distort(padded) if self.realism.distortion else lens.crop(padded).copy()
        return self.sensors[camera].apply(image)

    def close(self) -> None:
        for r in self.renderers.values():
            r.close()


def default_setup_path() -> Path:
    return resolve_config_path('config/twin/calibration.yaml')


def capture_calibration(lab_config_path: str | Path, realism_path: str | Path | None,
                        out_dir: str | Path, n_views: int, seed: int,
                        setup_path: str | Path | None = None,
                        cameras: list[str] | None = None, storage: str = 'mcap') -> Path:
    """Render a calibration session into the episode directory ``out_dir`` (must not exist).

    Per camera: ``n_views`` hand-held board views, then one view per table placement.
    Returns ``out_dir``.
    """
    if n_views < 1:
        raise ValueError(f'n_views must be >= 1, got {n_views}')
    setup_path = Path(setup_path) if setup_path else default_setup_path()
    board, placements = load_setup(setup_path)
    cfg = LabConfig.load(lab_config_path)
    realism = RealismProfile.load(realism_path) if realism_path else None
    cameras = list(cameras or cfg.cameras)
    unknown = [c for c in cameras if c not in cfg.cameras]
    if unknown:
        raise KeyError(f'{lab_config_path}: unknown cameras {unknown}; have {list(cfg.cameras)}')
    out = Path(out_dir)
    rng = np.random.default_rng(seed)
    rig = _Rig(cfg, realism, board, seed)
    topics = {c: f'/cameras/{c}/image_raw' for c in cameras}
    writer = EpisodeBagWriter(out, [TopicSpec(t, IMAGE_TYPE) for t in topics.values()],
                              storage=storage)
    writer.open()
    views: dict[str, list[dict]] = {c: [] for c in cameras}
    try:
        for cam in cameras:
            cam_cfg = cfg.cameras[cam]
            T_base_cam = calibration_of(cam_cfg).T_base_camera
            shots = [('intrinsics', None, T_base_cam @ sample_held_pose(cam_cfg, board, rng))
                     for _ in range(n_views)]
            shots += [('extrinsics', p.name, p.T_base_board) for p in placements]
            for i, (kind, placement, T_base_board) in enumerate(shots):
                t_ns = (i + 1) * FRAME_PERIOD_NS
                rgb = rig.shoot(cam, T_base_board)
                writer.write(topics[cam], rgb8_image_cdr(rgb, t_ns, f'{cam}_optical'), t_ns)
                views[cam].append({'index': i, 'stamp_ns': t_ns, 'kind': kind,
                                   'placement': placement})
    except BaseException:
        writer.abort()
        rig.close()
        raise
    writer.close()
    rig.close()
    write_sidecar(out, {
        'kind': 'calibration', 'status': 'complete', 'seed': int(seed),
        'board': {'name': board.name, 'squares_x': board.squares_x,
                  'squares_y': board.squares_y, 'square_size': board.square_size,
                  'thickness': board.thickness, 'margin': board.margin},
        'setup': str(setup_path),
        'cameras': {c: {'topic': topics[c], 'width': cfg.cameras[c].width,
                        'height': cfg.cameras[c].height, 'views': views[c]} for c in cameras}})
    return out


@cli_main('comsim-calibration-capture')
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description='Render a calibration session in the bench lab.')
    ap.add_argument('--out', required=True, help='episode directory to create')
    ap.add_argument('--lab', default='config/bench_lab/lab.yaml')
    ap.add_argument('--realism', default='config/bench_lab/realism.yaml',
                    help="realism profile ('' for none)")
    ap.add_argument('--setup', default='config/twin/calibration.yaml')
    ap.add_argument('--views', type=int, default=30, help='hand-held views per camera')
    ap.add_argument('--seed', type=int, default=0)
    ap.add_argument('--cameras', nargs='*', default=None)
    args = ap.parse_args(argv)
    realism = resolve_config_path(args.realism) if args.realism else None
    out = capture_calibration(resolve_config_path(args.lab), realism, args.out, args.views,
                              args.seed, resolve_config_path(args.setup), args.cameras)
    print(f'calibration session written to {out}')
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
