"""The paper's ablation as one command and one table, on held-out paired episodes.

    python -m comsim_neural_sim.evaluation.ablation --checkpoint CKPT --paired DIR --out DIR \
        [--steps N --w-action A --w-sim V --max-frames T]

Rows: plain twin frames (the floor), action-only, sim-only, both composed, joint conditioning.
Ground truth is each paired episode's /real stream. Writes ``ablation.md``, ``ablation.json``
and ``ablation_grid.png`` (rows: sim | translated (composed) | ground truth).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from comsim_core.errors import cli_main

from ..data.clips import PairedClip, load_paired_dir
from ..errors import NeuralSimError
from ..sampling.pipeline import NeuralSimPipeline
from ..training.report import save_sheet
from .consistency import action_consistency
from .metrics import learned_metrics_note, video_metrics

# row label -> pipeline mode (None: the twin's own frames, no network)
ABLATION_MODES: dict[str, str | None] = {
    'twin frames (floor)': None, 'action-only': 'action', 'sim-only': 'sim',
    'both composed': 'composed', 'joint conditioning': 'joint'}
METRICS = ('psnr', 'ssim', 'centroid_px', 'mask_iou')


@dataclass
class AblationResult:
    """Mean metrics per row (label -> metric -> value), the episodes, and where the grid went."""

    rows: dict[str, dict[str, float]]
    grid: Path | None
    episodes: list[str] = field(default_factory=list)
    note: str = ''


def evaluate_clip(pipe: NeuralSimPipeline, clip: PairedClip, mode: str | None, steps: int,
                  w_action: float, w_sim: float, seed: int) -> tuple[dict[str, float], np.ndarray]:
    gen = clip.sim if mode is None else pipe(clip.sim, clip.actions, w_action, w_sim, steps,
                                             seed, mode, camera=clip.camera or None)
    return {**video_metrics(gen, clip.real), **action_consistency(gen, clip.real)}, gen


def markdown_table(rows: dict[str, dict[str, float]], n_eps: int) -> str:
    """The ablation table (ablation.md, the command's output and the main job's report)."""
    head = ('| mode | PSNR (dB) ↑ | SSIM ↑ | gripper/object centroid err (px) ↓ | '
            'motion-mask IoU ↑ |\n|---|---:|---:|---:|---:|\n')
    body = ''.join(f"| {k} | {v['psnr']:.2f} | {v['ssim']:.3f} | {v['centroid_px']:.2f} | "
                   f"{v['mask_iou']:.3f} |\n" for k, v in rows.items())
    return head + body + f'\n({n_eps} held-out paired episode(s), ground truth: /real stream)\n'


def run_ablation(pipeline: NeuralSimPipeline | str | Path, paired: str | Path | list[PairedClip],
                 out: str | Path, steps: int = 10, w_action: float = 1.0, w_sim: float = 1.0,
                 seed: int = 0, max_frames: int | None = 32, grid_frames: int = 6,
                 log=print) -> AblationResult:
    """Evaluate every mode on every paired episode; write table, JSON and picture grid."""
    pipe = (pipeline if isinstance(pipeline, NeuralSimPipeline)
            else NeuralSimPipeline.from_pretrained(pipeline))
    clips = (paired if isinstance(paired, list)
             else load_paired_dir(paired, pipe.config.cameras, pipe.config.command_topic))
    if not clips:
        raise NeuralSimError('no held-out paired episodes to evaluate')
    if max_frames:
        clips = [PairedClip(c.real[:max_frames], c.sim[:max_frames], c.actions[:max_frames],
                            c.name, c.camera) for c in clips]
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    per: dict[str, list[dict[str, float]]] = {k: [] for k in ABLATION_MODES}
    composed = None
    for i, clip in enumerate(clips):
        for label, mode in ABLATION_MODES.items():
            m, gen = evaluate_clip(pipe, clip, mode, steps, w_action, w_sim, seed)
            per[label].append(m)
            if i == 0 and mode == 'composed':
                composed = gen
        log(f'ablation: {clip.name} {clip.camera} done ({i + 1}/{len(clips)})')
    rows = {k: {m: float(np.mean([r[m] for r in v])) for m in METRICS} for k, v in per.items()}
    bad = [k for k, v in rows.items() if not all(math.isfinite(x) for x in v.values())]
    if bad:
        raise NeuralSimError(f'ablation produced non-finite metrics for {bad}: {rows}')
    grid = out / 'ablation_grid.png'
    c0 = clips[0]
    idx = np.linspace(0, len(c0.real) - 1, min(grid_frames, len(c0.real))).round().astype(int)
    save_sheet(grid, [c0.sim[idx], composed[idx], c0.real[idx]],
               scale=max(1, 96 // c0.real.shape[1]))
    note = learned_metrics_note()
    table = markdown_table(rows, len({c.name for c in clips}))
    (out / 'ablation.md').write_text('# Neural-simulator ablation\n\n' + table + '\n' + note +
                                     '\n\n![sim | translated | ground truth](ablation_grid.png)\n')
    (out / 'ablation.json').write_text(json.dumps(
        {'rows': rows, 'episodes': [c.name for c in clips], 'steps': steps,
         'w_action': w_action, 'w_sim': w_sim, 'seed': seed, 'learned_metrics': note},
        indent=1))
    return AblationResult(rows, grid, [c.name for c in clips], note)


@cli_main('comsim-neural-sim-ablation')
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--checkpoint', required=True)
    ap.add_argument('--paired', required=True, help='held-out paired episodes')
    ap.add_argument('--out', required=True)
    ap.add_argument('--steps', type=int, default=10)
    ap.add_argument('--w-action', type=float, default=1.0)
    ap.add_argument('--w-sim', type=float, default=1.0)
    ap.add_argument('--seed', type=int, default=0)
    ap.add_argument('--max-frames', type=int, default=32, help='frames per episode (0: all)')
    args = ap.parse_args(argv)
    res = run_ablation(args.checkpoint, args.paired, args.out, args.steps, args.w_action,
                       args.w_sim, args.seed, args.max_frames or None)
    print(markdown_table(res.rows, len(set(res.episodes))))
    print(res.note)
    return 0


if __name__ == '__main__':
    sys.exit(main())
