"""Loss log (CSV), loss curve (PNG) and validation sample sheets (PNG), drawn with Pillow."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw


def append_csv(path: Path, row: dict[str, float]) -> None:
    new = not path.exists()
    with path.open('a', newline='') as fh:
        w = csv.DictWriter(fh, fieldnames=list(row))
        if new:
            w.writeheader()
        w.writerow(row)


def read_csv(path: Path) -> list[dict[str, float]]:
    with path.open() as fh:
        return [{k: float(v) for k, v in r.items()} for r in csv.DictReader(fh)]


def plot_loss(csv_path: Path, png_path: Path, size: tuple[int, int] = (640, 360)) -> None:
    """Log-scale loss against step."""
    rows = read_csv(csv_path)
    if len(rows) < 2:
        return
    steps = np.array([r['step'] for r in rows])
    loss = np.log10(np.maximum([r['loss'] for r in rows], 1e-8))
    w, h, m = size[0], size[1], 40
    img = Image.new('RGB', size, 'white')
    d = ImageDraw.Draw(img)
    lo, hi = float(loss.min()), float(loss.max())
    hi = hi if hi > lo else lo + 1
    sx = lambda s: m + (s - steps[0]) / max(steps[-1] - steps[0], 1) * (w - 2 * m)  # noqa: E731
    sy = lambda v: h - m - (v - lo) / (hi - lo) * (h - 2 * m)  # noqa: E731
    d.rectangle([m, m, w - m, h - m], outline='black')
    d.line([(sx(s), sy(v)) for s, v in zip(steps, loss)], fill=(200, 30, 30), width=2)
    d.text((m, 8), f'training loss (log10), step {int(steps[-1])}', fill='black')
    d.text((4, m), f'{10 ** hi:.3g}', fill='black')
    d.text((4, h - m - 10), f'{10 ** lo:.3g}', fill='black')
    img.save(png_path)


def save_sheet(path: Path, rows: list[np.ndarray], scale: int = 2) -> None:
    """Rows of (T, H, W, 3) uint8 clips, frames left to right (e.g. sim / real / generated)."""
    t = max(len(r) for r in rows)
    h, w = rows[0].shape[1:3]
    sheet = np.full((len(rows) * (h + 2), t * (w + 2), 3), 255, np.uint8)
    for i, clip in enumerate(rows):
        for j, fr in enumerate(clip):
            sheet[i * (h + 2):i * (h + 2) + h, j * (w + 2):j * (w + 2) + w] = fr
    img = Image.fromarray(sheet)
    if scale > 1:
        img = img.resize((img.width * scale, img.height * scale), Image.NEAREST)
    img.save(path)


def finite(x: float) -> bool:
    return math.isfinite(x)
