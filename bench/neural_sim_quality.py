"""Neural-sim quality per prediction target and pixel-skip start at the same training budget.

Trains ``--config`` (default: the CPU config) for ``--steps`` on paired episodes (all but the
last; one camera) once per ``--prediction`` x ``--skip-from`` and scores each on the held-out
last episode: PSNR/SSIM of composed, sim-only and action-only translations against its /real
frames, and of the twin frames (floor).

    .venv/bin/python bench/neural_sim_quality.py --paired output/main_job/latest/twin/paired \
        [--prediction sample epsilon] [--skip-from noisy sim] [--steps 400] [--frames 32]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import torch
from provenance import add_out_argument, torch_machine, write_result

from comsim_neural_sim.config import NeuralSimConfig
from comsim_neural_sim.data.clips import load_paired_dir
from comsim_neural_sim.evaluation.metrics import video_metrics
from comsim_neural_sim.sampling.pipeline import NeuralSimPipeline
from comsim_neural_sim.training.train import train


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--paired', type=Path, required=True)
    ap.add_argument('--prediction', nargs='+', default=['sample', 'epsilon'])
    ap.add_argument('--steps', type=int, default=400)
    ap.add_argument('--frames', type=int, default=32)
    ap.add_argument('--camera', default='front')
    ap.add_argument('--config', type=Path, default=Path(__file__).resolve().parents[1]
                    / 'config' / 'neural_sim.yaml')
    ap.add_argument('--skip-from', nargs='+', default=['noisy'],
                    help='pixel-skip starts to compare (sim needs prediction sample)')
    add_out_argument(ap, __file__)
    args = ap.parse_args(argv)
    torch.set_num_threads(int(os.environ.get('OMP_NUM_THREADS', '1')))
    clips = load_paired_dir(args.paired, [args.camera])
    held, train_clips = clips[-1], clips[:-1]
    n = args.frames
    rows = {}
    base = NeuralSimConfig.from_yaml(args.config)
    for pred, skip in [(p, k) for p in args.prediction for k in args.skip_from
                       if not (k == 'sim' and p != 'sample')]:
        cfg = base.replace(cameras=[args.camera], prediction=pred, skip_from=skip,
                           sample_every=10**9, save_every=10**9, log_every=100,
                           action_dim=int(clips[0].actions.shape[1]))
        out = Path(tempfile.mkdtemp(prefix=f'nsq_{pred}_{skip}_'))
        t0 = time.perf_counter()
        res = train(cfg, train_clips, out, steps=args.steps, log=lambda s: None)
        train_s = time.perf_counter() - t0
        pipe = NeuralSimPipeline.from_pretrained(out)
        row = {'train_s': round(train_s, 1), 'loss_first': res.first_loss,
               'loss_last': res.last_loss}
        for mode in ('composed', 'sim', 'action'):
            gen = pipe(held.sim[:n], held.actions[:n], 1.0, 1.0, 10, 0, mode,
                       camera=args.camera)
            row[mode] = video_metrics(gen, held.real[:n])
        rows[f'{pred}/{skip}'] = row
        print(pred, skip, json.dumps({k: (round(v['psnr'], 2) if isinstance(v, dict) else v)
                                for k, v in row.items()}), flush=True)
    result = {'held_out': held.name, 'camera': args.camera, 'frames': n,
              'train_episodes': len(train_clips), 'steps': args.steps,
              'floor_twin_frames': video_metrics(held.sim[:n], held.real[:n]),
              'config': str(args.config), 'by_prediction_and_skip': rows}
    write_result(args.out, result, torch_machine())
    return 0


if __name__ == '__main__':
    sys.exit(main())
