"""Per-video PSNR/SSIM (the twin's implementations) and an honest note on learned metrics.

FID, FVD, CLIP score and LPIPS need pretrained networks; nothing is downloaded here, so they
are reported only when their weights are found on local disk.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import numpy as np

from comsim_core.metrics import psnr, ssim

from ..errors import InputShapeError

# where torch/open_clip/lpips keep weights they fetched once; only looked at, never filled
WEIGHT_HOMES = ('~/.cache/torch/hub/checkpoints', '~/.cache/clip', '~/.cache/huggingface/hub')
LEARNED = {'FID': ('pt_inception', 'inception'), 'FVD': ('i3d',), 'CLIP': ('clip', 'ViT-'),
           'LPIPS': ('lpips', 'vgg', 'alexnet')}


def video_metrics(generated: np.ndarray, truth: np.ndarray) -> dict[str, float]:
    """Mean PSNR (dB, identical frames capped at 100) and SSIM over frames (T, H, W, 3)."""
    if generated.shape != truth.shape:
        raise InputShapeError(f'generated {generated.shape} and ground truth {truth.shape} '
                              f'videos differ in shape')
    p = [min(psnr(a, b), 100.0) for a, b in zip(generated, truth)]
    s = [ssim(a, b) for a, b in zip(generated, truth)]
    return {'psnr': float(np.mean(p)), 'ssim': float(np.mean(s))}


def learned_metrics_available() -> dict[str, str | None]:
    """Metric -> a local weight file that could serve it, or None (no download attempted)."""
    files: list[Path] = []
    for home in WEIGHT_HOMES:
        d = Path(os.path.expanduser(home))
        if d.is_dir():
            files += [p for p in d.rglob('*') if p.is_file()][:1000]
    found: dict[str, str | None] = {}
    for metric, keys in LEARNED.items():
        hit = next((str(p) for p in files if any(k.lower() in p.name.lower() for k in keys)),
                   None)
        pkg = {'LPIPS': 'lpips', 'CLIP': 'open_clip'}.get(metric)
        found[metric] = hit if hit and (pkg is None or importlib.util.find_spec(pkg)) else None
    return found


def learned_metrics_note() -> str:
    """One line for reports saying which learned metrics were (not) computed, and why."""
    avail = learned_metrics_available()
    missing = [m for m, f in avail.items() if f is None]
    if len(missing) == len(avail):
        return ('FID, FVD, CLIP score and LPIPS: not computed - their pretrained weights are not '
                'on this machine and nothing is downloaded. PSNR/SSIM and action consistency '
                'are the metrics reported.')
    have = [m for m in avail if m not in missing]
    return (f'Learned-metric weights found locally for {have} but not wired in; missing for '
            f'{missing}; not computed.')
