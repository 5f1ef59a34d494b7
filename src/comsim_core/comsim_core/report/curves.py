"""Several curves on one log-scale chart (training losses of the experiment's arms), drawn with
Pillow: a report picture without a plotting library."""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

COLOURS = [(200, 30, 30), (30, 90, 200), (30, 150, 60), (200, 130, 0), (130, 40, 160),
           (0, 150, 160), (90, 90, 90)]


def jsonl_series(path: Path, key: str) -> tuple[list[float], list[float]]:
    """(steps, values) of ``key`` in a training log (one JSON object per line)."""
    steps, values = [], []
    if Path(path).exists():
        for line in Path(path).read_text().splitlines():
            row = json.loads(line) if line.strip() else {}
            if key in row and 'step' in row:
                steps.append(float(row['step']))
                values.append(float(row[key]))
    return steps, values


def plot_curves(series: Mapping[str, tuple[Sequence[float], Sequence[float]]], png: Path,
                title: str, size: tuple[int, int] = (720, 400)) -> Path | None:
    """Each labelled (x, y) series as a line, y on a log10 scale; None when nothing to draw."""
    series = {k: (np.asarray(x, float), np.log10(np.maximum(np.asarray(y, float), 1e-8)))
              for k, (x, y) in series.items() if len(x) >= 2}
    if not series:
        return None
    w, h, m = size[0], size[1], 48
    xs = np.concatenate([x for x, _ in series.values()])
    ys = np.concatenate([y for _, y in series.values()])
    x0, x1, y0, y1 = xs.min(), max(xs.max(), xs.min() + 1), ys.min(), max(ys.max(), ys.min() + 1e-3)
    img = Image.new('RGB', size, 'white')
    d = ImageDraw.Draw(img)
    d.rectangle([m, m, w - m, h - m], outline='black')
    for i, (label, (x, y)) in enumerate(series.items()):
        colour = COLOURS[i % len(COLOURS)]
        pts = [(m + (a - x0) / (x1 - x0) * (w - 2 * m), h - m - (b - y0) / (y1 - y0) * (h - 2 * m))
               for a, b in zip(x, y, strict=True)]
        d.line(pts, fill=colour, width=2)
        d.text((w - m - 220, m + 6 + 14 * i), label, fill=colour)
    d.text((m, 12), title, fill='black')
    d.text((4, m), f'{10 ** y1:.3g}', fill='black')
    d.text((4, h - m - 10), f'{10 ** y0:.3g}', fill='black')
    d.text((m, h - m + 6), f'step {x0:.0f}', fill='black')
    d.text((w - m - 70, h - m + 6), f'step {x1:.0f}', fill='black')
    png = Path(png)
    png.parent.mkdir(parents=True, exist_ok=True)
    img.save(png)
    return png
