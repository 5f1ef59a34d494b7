"""The real-to-twin gap of a paired episode: PSNR/SSIM per camera and a side-by-side picture.

Frames are paired by header stamp (the replay gives the twin render the real image's stamp), so
each comparison is between the real and the twin image of the same recorded state.
"""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np

from comsim_core.episodes import Episode
from comsim_core.episodes.paired import paired_cameras, real_image_topic, sim_image_topic
from comsim_core.errors import UserError
from comsim_core.metrics import comparison_row, psnr, ssim, stack_rows


class PairingError(UserError, ValueError):
    """Real and twin streams of a paired episode do not match stamp for stamp."""


def frame_pairs(episode: Episode, camera: str) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    """(stamp ns, real RGB, twin RGB) for each frame of ``camera``, in time order."""
    n_real = episode.streams[real_image_topic(camera)].count
    n_sim = episode.streams[sim_image_topic(camera)].count
    if n_real != n_sim:
        raise PairingError(f'{episode.path} {camera}: {n_real} real frames but {n_sim} twin '
                           f'frames (an incomplete replay?)')
    real = episode.images(real_image_topic(camera))
    sim = episode.images(sim_image_topic(camera))
    for (t_real, img_real), (t_sim, img_sim) in zip(real, sim, strict=True):
        if t_real != t_sim:
            raise PairingError(f'{episode.path} {camera}: real frame at {t_real} ns paired with '
                               f'twin frame at {t_sim} ns')
        if img_real.shape != img_sim.shape:
            raise PairingError(f'{episode.path} {camera}: real image {img_real.shape} but twin '
                               f'render {img_sim.shape}; the twin camera needs the real size')
        yield t_real, img_real, img_sim


def gap_report(paired_episode: str | Path) -> dict:
    """Per camera: frames, PSNR (dB) and SSIM mean/min; plus the means over all cameras."""
    path = Path(paired_episode)
    cameras = paired_cameras(path)
    report: dict = {'episode': str(path), 'cameras': {}}
    with Episode.open(path) as episode:
        for cam in cameras:
            p, s = [], []
            for _, real, sim in frame_pairs(episode, cam):
                p.append(psnr(real, sim))
                s.append(ssim(real, sim))
            if not p:
                raise PairingError(f'{path}: no frames for camera {cam!r}')
            report['cameras'][cam] = {
                'frames': len(p), 'psnr_mean': float(np.mean(p)), 'psnr_min': float(np.min(p)),
                'ssim_mean': float(np.mean(s)), 'ssim_min': float(np.min(s))}
    per_cam = report['cameras'].values()
    report['psnr_mean'] = float(np.mean([c['psnr_mean'] for c in per_cam]))
    report['ssim_mean'] = float(np.mean([c['ssim_mean'] for c in per_cam]))
    return report


def side_by_side(paired_episode: str | Path, n: int = 4) -> np.ndarray:
    """``n`` evenly spaced frames; per frame and camera one row ``real | twin | |diff|``."""
    if n < 1:
        raise ValueError(f'n must be >= 1, got {n}')
    path = Path(paired_episode)
    cameras = paired_cameras(path)
    with Episode.open(path) as episode:
        count = episode.streams[real_image_topic(cameras[0])].count
        picks = set(np.linspace(0, count - 1, min(n, count)).round().astype(int).tolist())
        per_cam = {cam: [(r, s) for i, (_, r, s) in enumerate(frame_pairs(episode, cam))
                         if i in picks] for cam in cameras}
    rows = [comparison_row(*per_cam[cam][i]) for i in range(len(picks)) for cam in cameras
            if i < len(per_cam[cam])]
    return stack_rows(rows)
