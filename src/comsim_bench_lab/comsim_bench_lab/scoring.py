"""The twin's estimates scored against the bench lab's hidden ground truth.

The twin never reads the lab's truth; only the main job may, so the scoring lives here, next to
the truth. Inputs are plain arrays and the twin's alignment reports (dicts), so this module
needs nothing from the twin package.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from comsim_core.episodes import read_meta
from comsim_core.geometry import pose_difference

from .config import LabConfig
from .lab import BenchLab

ROUND_SHAPES = ('cylinder', 'bottle')   # no yaw to score


@dataclass(frozen=True)
class CameraScore:
    """Estimated minus true intrinsics (px) and the extrinsic pose error of one camera."""

    camera: str
    fx_px: float
    fy_px: float
    cx_px: float
    cy_px: float
    position_mm: float
    rotation_deg: float


@dataclass(frozen=True)
class ObjectScore:
    """One aligned object against the lab's layout; errors are None when not scored."""

    episode: str
    object: str
    in_layout: bool
    position_mm: float | None = None   # in the table plane (x, y)
    yaw_deg: float | None = None       # None for round objects; boxes modulo 90 degrees


@dataclass(frozen=True)
class TwinScores:
    cameras: list[CameraScore]
    objects: list[ObjectScore]

    def position_errors_mm(self) -> list[float]:
        """Position errors of the objects that are in the bench layout."""
        return [o.position_mm for o in self.objects if o.position_mm is not None]


def camera_score(camera: str, K_true: np.ndarray, T_true: np.ndarray, K_est: np.ndarray,
                 T_est: np.ndarray) -> CameraScore:
    dK = np.asarray(K_est, float) - np.asarray(K_true, float)
    dt, da = pose_difference(T_true, T_est)
    return CameraScore(camera, float(dK[0, 0]), float(dK[1, 1]), float(dK[0, 2]),
                       float(dK[1, 2]), dt * 1000.0, da)


def yaw_deg(quat_wxyz) -> float:
    """Yaw (degrees) of a MuJoCo quaternion (w, x, y, z)."""
    w, x, y, z = (float(v) for v in quat_wxyz)
    return float(np.degrees(np.arctan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))))


def object_scores(episode: str, aligned: Mapping[str, Mapping], truth: Mapping[str, Mapping]
                  ) -> list[ObjectScore]:
    """Score each aligned object (``position`` m, ``yaw`` rad) against the true layout (``pos``,
    ``quat``, ``shape``): a box's yaw is taken modulo 90 degrees (its faces look alike)."""
    scores = []
    for name, est in aligned.items():
        true = truth.get(name)
        if true is None:
            scores.append(ObjectScore(episode, name, in_layout=False))
            continue
        err = float(np.linalg.norm(np.asarray(est['position'][:2], float)
                                   - np.asarray(true['pos'][:2], float)))
        dyaw = None
        if true.get('shape') not in ROUND_SHAPES:
            dyaw = (float(np.degrees(est['yaw'])) - yaw_deg(true['quat']) + 45) % 90 - 45
        scores.append(ObjectScore(episode, name, True, err * 1000.0, dyaw))
    return scores


def episode_reset(episode_dir: Path) -> tuple[str, int, str, str | None]:
    """(task, seed, region, variant) the lab was reset with for a recorded episode."""
    meta = read_meta(episode_dir)
    if not meta.task or meta.seed is None:
        raise ValueError(f'{episode_dir}: its metadata records no task or seed, so its layout '
                         f'cannot be reproduced (task {meta.task!r}, seed {meta.seed})')
    return meta.task, meta.seed, meta.region or 'id', meta.variant or None


def true_layout(lab: BenchLab, episode_dir: Path) -> dict[str, dict]:
    """The lab's true object poses at the start of a recorded episode (same reset)."""
    lab.reset(*episode_reset(episode_dir))
    return lab.task_state()['objects']


def score_twin(config: LabConfig, cameras: Mapping[str, tuple[np.ndarray, np.ndarray]],
               alignment: Mapping[str, tuple[Path, Mapping[str, Mapping]]]) -> TwinScores:
    """Score calibrated cameras (name -> (K, T_base_camera)) and aligned episodes (name ->
    (recorded episode folder, aligned objects)) against the lab built from ``config``."""
    lab = BenchLab(config, None)
    try:
        cams = []
        for cam, (K, T) in cameras.items():
            truth = lab.camera_info(cam)
            cams.append(camera_score(cam, truth.K, truth.T_base_camera, K, T))
        objects = []
        for name, (episode_dir, aligned) in alignment.items():
            objects += object_scores(name, aligned, true_layout(lab, episode_dir))
    finally:
        lab.close()
    return TwinScores(cams, objects)


def layout_region(config: LabConfig, task: str, positions: Mapping[str, Sequence[float]]) -> str:
    """Which of the lab's regions a generated layout lies in: ``id`` or ``ood`` when every one
    of the task's objects (``positions``: name -> x, y, ...) is inside it, else ``other``.
    The twin lays its episodes out over its own workspace and never reads these boxes; the
    experiment asks the lab afterwards, to split its video table by region."""
    entry = config.tasks[task]
    points = [np.asarray(p[:2], float) for name, p in positions.items() if name in entry.objects]
    if not points:
        return 'other'
    for name in ('id', 'ood'):
        box = entry.regions[name]
        if all(box.x[0] <= x <= box.x[1] and box.y[0] <= y <= box.y[1] for x, y in points):
            return name
    return 'other'
