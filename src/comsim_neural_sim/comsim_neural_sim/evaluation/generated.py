"""Translated generated episodes against bench-lab ground truth.

    python -m comsim_neural_sim.evaluation.generated --pseudo-real DIR --ground-truth DIR \
        --out DIR [--cameras front]

A generated sim episode has no real counterpart, but the bench lab can film its layout and
trajectory (``comsim-bench-lab-ground-truth``, package comsim_bench_lab): a paired episode
whose ``/real`` stream is the bench lab's render (ground truth) and ``/sim`` stream the sim
episode's own frames, marked ``ground_truth: bench_lab`` in its ``episode.yaml``. Each
translated (pseudo-real) episode is matched to its ground truth by the sim episode's name, and
frames by header stamp (translation keeps every stamp). Per episode and camera: PSNR and SSIM of
the translated frames against the ground truth, and of the raw sim frames (the floor a
translation must beat); and, where the ground truth carries ``positions.json``, action
consistency: how far (px) the objects found in the translated and in the sim frames are from
where the bench lab had them, and in what fraction of frames they are found at all
(``evaluation.positions``; objects only, the gripper is not tracked). Only episode files are
read here; the bench lab is never imported.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from comsim_core.episodes import find_episodes
from comsim_core.episodes.sidecar import read_sidecar

from ..errors import MissingStreamError, NeuralSimError
from ..training.report import save_sheet
from .metrics import video_metrics
from .positions import load_positions, position_columns

GROUND_TRUTH = 'bench_lab'      # sidecar ``ground_truth`` of the bench lab's paired episodes
COLUMNS = ('sim_psnr', 'translated_psnr', 'sim_ssim', 'translated_ssim')
POSITION_COLUMNS = ('truth_obj_px', 'sim_obj_px', 'translated_obj_px', 'sim_found',
                    'translated_found', 'truth_found')


@dataclass
class GeneratedEvalResult:
    """Per (episode, camera) rows, their frame-weighted mean, the picture grid."""

    rows: list[dict]
    mean: dict[str, float | None]
    grid: Path | None = None
    missing: list[str] = field(default_factory=list)   # ground truths without a translation


def _sidecar(path: Path) -> dict:
    return read_sidecar(path) or {}


def _episodes(directory: Path) -> list[Path]:
    """Episodes under ``directory``; none when it does not exist (the caller names the role)."""
    return find_episodes(directory) if directory.exists() else []


def ground_truth_episodes(directory: str | Path) -> dict[str, Path]:
    """sim episode name -> complete bench-lab ground-truth paired episode under ``directory``."""
    directory = Path(directory)
    if not directory.is_dir():
        raise FileNotFoundError(f'no ground-truth directory at {directory}')
    out = {}
    for ep in _episodes(Path(directory)):
        side = _sidecar(ep)
        if side.get('ground_truth') == GROUND_TRUTH and side.get('status') == 'complete':
            out[str(side.get('sim_episode') or ep.name)] = ep
    if not out:
        raise NeuralSimError(f'no bench-lab ground-truth episodes (episode.yaml with '
                             f'ground_truth: {GROUND_TRUTH}, status: complete) under {directory}')
    return out


def _frames(path: Path, topic: str, stamps: set[int] | None = None) -> dict[int, np.ndarray]:
    """Header stamp -> RGB frame of one image topic (only ``stamps`` when given)."""
    from comsim_core.episodes import Episode  # noqa: PLC0415
    with Episode.open(path) as ep:
        if topic not in ep.topics:
            raise MissingStreamError(f'episode {path} lacks {topic}; it has {ep.topics}')
        return {t: f for t, f in ep.images(topic) if stamps is None or t in stamps}


def to_pixels(frames: np.ndarray, pixels: tuple[int, int] | None) -> np.ndarray:
    """(T, H, W, 3) frames area-resized to ``pixels`` (height, width), as a policy sees them."""
    if pixels is None or tuple(frames.shape[1:3]) == tuple(pixels):
        return frames
    import cv2  # noqa: PLC0415
    return np.stack([cv2.resize(f, (pixels[1], pixels[0]), interpolation=cv2.INTER_AREA)
                     for f in frames])


def evaluate_pair(translated: Path, truth: Path, camera: str,
                  pixels: tuple[int, int] | None = None) -> tuple[dict, np.ndarray]:
    """Metrics of one camera of one translated episode; also (3, T, H, W, 3) sim/gen/truth.

    The row's ``objects`` holds each object's per-frame centroid errors (px, None = not found)
    for the JSON; the position columns are None when the ground truth has no positions.
    ``pixels`` (height, width) scores PSNR/SSIM on frames resized to it and gives object
    errors in its pixels (objects are still found in the camera's frames).
    """
    real = _frames(truth, f'/real/cameras/{camera}/image_raw')
    sim = _frames(truth, f'/sim/cameras/{camera}/image_raw', set(real))
    gen = _frames(translated, f'/cameras/{camera}/image_raw', set(real))
    common = sorted(set(real) & set(sim) & set(gen))
    if not common:
        raise NeuralSimError(f'{translated} and its ground truth {truth} share no frame stamp on '
                             f'camera {camera!r} (ground truth has {len(real)} frames, '
                             f'translation {len(gen)} of them); was the ground truth rendered '
                             f'from this episode\'s sim source?')
    r, s, g = (np.stack([d[t] for t in common]) for d in (real, sim, gen))
    floor = video_metrics(to_pixels(s, pixels), to_pixels(r, pixels))
    trans = video_metrics(to_pixels(g, pixels), to_pixels(r, pixels))
    drift = (_sidecar(truth).get('object_drift_m') or {}).values()
    cols, objects = position_columns(load_positions(truth), camera, {
        'translated': {t: gen[t] for t in common}, 'sim': {t: sim[t] for t in common},
        'truth': {t: real[t] for t in common}})
    if pixels is not None:
        k = pixels[0] / r.shape[1]
        cols = {c: (v * k if c.endswith('_obj_px') and v is not None else v)
                for c, v in cols.items()}
    row = {'episode': translated.name, 'camera': camera, 'frames': len(common),
           'drift_mm': 1000 * max(drift) if drift else None,
           'sim_psnr': floor['psnr'], 'sim_ssim': floor['ssim'],
           'translated_psnr': trans['psnr'], 'translated_ssim': trans['ssim'], **cols,
           'objects': objects}
    return row, np.stack([s, g, r])


def _num(value: float | None, fmt: str) -> str:
    return '–' if value is None else format(value, fmt)


def markdown_table(rows: list[dict], mean: dict[str, float | None]) -> str:
    """One row per episode and camera, then the frame-weighted mean. "object px": mean distance
    of the objects found by colour from where the ground truth has them, "found": the fraction
    of (object, frame) pairs found (``evaluation.positions``); "tracker on truth" is that
    tracker run on the ground truth itself, its own error. The last column is how far the
    ground truth's objects ended from the sim's (its physics is the bench lab's own): large
    values mean the two videos show different object motion, not only a different look."""
    head = ('| episode | camera | frames | PSNR sim (floor) | PSNR translated ↑ | '
            'SSIM sim (floor) | SSIM translated ↑ | object px sim (floor) | '
            'object px translated ↓ | found sim | found translated ↑ | '
            'object px tracker on truth | truth object drift (mm) |\n'
            '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n')

    def line(r: dict) -> str:
        return (f"| {r['episode']} | {r['camera']} | {r['frames']} | {r['sim_psnr']:.2f} | "
                f"{r['translated_psnr']:.2f} | {r['sim_ssim']:.3f} | {r['translated_ssim']:.3f} | "
                f"{_num(r.get('sim_obj_px'), '.1f')} | {_num(r.get('translated_obj_px'), '.1f')} | "
                f"{_num(r.get('sim_found'), '.2f')} | {_num(r.get('translated_found'), '.2f')} | "
                f"{_num(r.get('truth_obj_px'), '.1f')} | {_num(r.get('drift_mm'), '.1f')} |\n")
    total = {**mean, 'episode': '**mean**', 'camera': '', 'drift_mm': None,
             'frames': sum(r['frames'] for r in rows)}
    return head + ''.join(line(r) for r in rows) + line(total)


def _mean(rows: list[dict], key: str) -> float | None:
    """Frame-weighted mean of ``key`` over the rows that have it (None: none has)."""
    have = [r for r in rows if r.get(key) is not None]
    if not have:
        return None
    return float(np.average([r[key] for r in have], weights=[r['frames'] for r in have]))


def evaluate_generated(pseudo_real: str | Path | Sequence[str | Path], ground_truth: str | Path,
                       out: str | Path | None = None, cameras: Sequence[str] | None = None,
                       grid_frames: int = 6, log=print,
                       pixels: tuple[int, int] | None = None) -> GeneratedEvalResult:
    """Score translated episodes against the bench lab's ground truth (see module doc).

    ``pseudo_real``: a directory of translated episodes or a list of them; ``ground_truth``: the
    directory of ground-truth paired episodes; ``cameras``: default every ground-truth camera.
    Writes ``generated.md``, ``generated.json`` and ``generated_grid.png`` (sim | translated |
    ground truth, first pair) under ``out`` when given. ``pixels``: score at that (height,
    width), e.g. the policy's input (``evaluate_pair``).
    """
    truths = ground_truth_episodes(ground_truth)
    pseudo = (_episodes(Path(pseudo_real)) if isinstance(pseudo_real, (str, Path))
              else [Path(p) for p in pseudo_real])
    by_name = {p.name: p for p in pseudo}
    rows, first = [], None
    for name, truth in sorted(truths.items()):
        if name not in by_name:
            continue
        cams = list(_sidecar(truth).get('cameras') or [])
        for cam in (cams if cameras is None else [c for c in cameras if c in cams]):
            row, clips = evaluate_pair(by_name[name], truth, cam, pixels)
            rows.append(row)
            first = clips if first is None else first
            log(f'generated vs ground truth: {name} {cam}: PSNR {row["sim_psnr"]:.2f} (sim) -> '
                f'{row["translated_psnr"]:.2f} (translated); object px '
                f'{_num(row["sim_obj_px"], ".1f")} (sim) -> '
                f'{_num(row["translated_obj_px"], ".1f")} (translated)')
    missing = sorted(n for n in truths if n not in by_name)
    if not rows:
        raise NeuralSimError(f'no translated episode matches a ground truth: ground truth for '
                             f'{sorted(truths)}, translated {sorted(by_name)}'
                             + (f', cameras {list(cameras)}' if cameras is not None else ''))
    mean = {k: _mean(rows, k) for k in COLUMNS + POSITION_COLUMNS}
    grid = None
    if out is not None:
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        idx = np.linspace(0, first.shape[1] - 1, min(grid_frames, first.shape[1]))
        idx = idx.round().astype(int)
        grid = out / 'generated_grid.png'
        save_sheet(grid, list(first[:, idx]), scale=max(1, 96 // first.shape[2]))
        (out / 'generated.md').write_text(
            '# Translated generated episodes vs bench-lab ground truth\n\n'
            + markdown_table(rows, mean) +
            '\n![sim | translated | ground truth](generated_grid.png)\n')
        (out / 'generated.json').write_text(json.dumps(
            {'rows': rows, 'mean': mean, 'missing_translations': missing,
             'ground_truth': str(ground_truth)}, indent=1))
    return GeneratedEvalResult(rows, mean, grid, missing)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--pseudo-real', required=True, help='translated episodes (a directory)')
    ap.add_argument('--ground-truth', required=True,
                    help='paired episodes from comsim-bench-lab-ground-truth')
    ap.add_argument('--out', default=None)
    ap.add_argument('--cameras', nargs='*', default=None)
    args = ap.parse_args(argv)
    try:
        res = evaluate_generated(args.pseudo_real, args.ground_truth, args.out, args.cameras,
                                 log=lambda s: None)
    except (NeuralSimError, FileNotFoundError) as exc:
        print(f'error: {exc}', file=sys.stderr)
        return 2
    print(markdown_table(res.rows, res.mean))
    if res.missing:
        print(f'ground truth without a translation: {res.missing}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
