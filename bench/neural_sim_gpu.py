"""Train the neural simulator at the policy's resolution with a larger model on one CUDA GPU,
then translate every packed sim episode there, in one wall budget.

    python3 bench/neural_sim_gpu.py --pack ns_pack.npz --out $OUT \\
        [--config config/neural_sim_gpu.yaml] [--minutes 6] [--translate-share 0.35] \\
        [--sample-steps 4] [--max-mb 64] [--work /tmp/ns_gpu_work]

Needs torch, diffusers, accelerate, numpy, OpenCV and the comsim_core / comsim_neural_sim
sources: no MuJoCo, no rosbags (the pack holds decoded frames; ``neural_sim_gpu_pack.py`` made
it on the CPU machine). The model is ``--config``'s at the pack's resolution (the policy's
input: no upsampling between the neural simulator and the policy). A short first run measures
the step rate; training then gets ``1 - translate-share`` of the budget, translation (composed
guidance, batched per camera) the rest. ``--out`` receives ``translations.npz`` (JPEG frames at
the highest quality that fits ``--max-mb``; ``neural_sim_gpu_pack.py unpack`` turns it into
pseudo-real episodes) and ``neural_sim_gpu.json`` (steps, rates, losses, timings, bytes, GPU).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch
from neural_sim_gpu_pack import read_pack, write_translations
from provenance import ROOT, torch_machine, write_result

from comsim_core.errors import UserError, cli_main
from comsim_neural_sim.config import NeuralSimConfig
from comsim_neural_sim.data.clips import PairedClip
from comsim_neural_sim.sampling.pipeline import NeuralSimPipeline
from comsim_neural_sim.sampling.translate import SimEpisode, config_hash, translate_frames
from comsim_neural_sim.training.train import train

CALIBRATION_STEPS = 20


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--pack', type=Path, required=True)
    ap.add_argument('--out', type=Path, required=True)
    ap.add_argument('--config', type=Path, default=ROOT / 'config' / 'neural_sim_gpu.yaml')
    ap.add_argument('--minutes', type=float, default=6.0, help='wall budget, both phases')
    ap.add_argument('--translate-share', type=float, default=0.35,
                    help='share of the budget kept for translation')
    ap.add_argument('--sample-steps', type=int, default=4)
    ap.add_argument('--batch', type=int, default=16, help='episodes per batched generation')
    ap.add_argument('--max-mb', type=float, default=64.0, help='size cap of translations.npz')
    ap.add_argument('--work', type=Path, default=Path('/tmp/ns_gpu_work'))
    ap.add_argument('--calibration-steps', type=int, default=CALIBRATION_STEPS)
    ap.add_argument('--device', default='auto', help='auto | cuda | cpu')
    return ap


@cli_main('neural_sim_gpu')
def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    t_start = time.monotonic()
    budget = args.minutes * 60
    if not 0 < args.translate_share < 1:
        raise UserError(f'--translate-share must be in (0, 1), got {args.translate_share}')
    device = torch.device('cuda' if args.device == 'auto' and torch.cuda.is_available()
                          else ('cpu' if args.device == 'auto' else args.device))
    meta, paired, sims = read_pack(args.pack)
    h, w = meta['pixels']
    clips = [PairedClip(p['real'], p['sim'], p['actions'], p['name'], p['camera'])
             for p in paired]
    cfg = NeuralSimConfig.from_yaml(args.config).replace(
        height=h, width=w, cameras=list(meta['cameras']), sample_every=10**9,
        save_every=10**9, log_every=50, action_dim=int(clips[0].actions.shape[1]))
    work = args.work
    t0 = time.monotonic()
    first = train(cfg, clips, work, steps=args.calibration_steps, log=lambda s: None)
    rate = args.calibration_steps / max(time.monotonic() - t0, 1e-3)
    left = budget * (1 - args.translate_share) - (time.monotonic() - t_start)
    steps = args.calibration_steps + max(0, int(0.95 * rate * left))
    res = train(cfg, clips, work, resume=True, steps=steps, log=print)
    train_s = time.monotonic() - t0
    pipe = NeuralSimPipeline.from_pretrained(work, device=device)
    weights = {'w_action': 1.0, 'w_sim': 1.0, 'w_joint': 1.0}
    t1 = time.monotonic()
    translated: list[tuple[str, dict]] = [(s['name'], {}) for s in sims]
    topics = sorted({t for s in sims for t in s['images']})
    with torch.no_grad():
        for topic in topics:
            have = [k for k, s in enumerate(sims) if topic in s['images']]
            for i in range(0, len(have), args.batch):
                group = have[i:i + args.batch]
                eps = [SimEpisode(Path(sims[k]['name']), sims[k]['images'], sims[k]['actions'],
                                  {}) for k in group]
                outs = translate_frames(pipe, eps, topic, weights, args.sample_steps, 0,
                                        'composed')
                for k, o in zip(group, outs, strict=True):
                    translated[k][1][topic] = o
    translate_s = time.monotonic() - t1
    written = write_translations(args.out / 'translations.npz', translated, {
        'pixels': [h, w], 'cameras': meta['cameras'], 'command_topic': meta['command_topic'],
        'device': str(device), 'guidance': {'mode': 'composed', **weights},
        'sample_steps': args.sample_steps, 'seed': 0,
        'config_hash': config_hash(pipe)}, args.max_mb)
    frames = sum(len(o) for _, tr in translated for o in tr.values())
    result = {'pixels': [h, w], 'config': str(args.config), 'paired_clips': len(clips),
              'episodes': len(sims), 'frames': frames, 'steps': res.steps,
              'steps_per_s_measured': round(rate, 3), 'first_loss': first.first_loss,
              'last_loss': res.last_loss, 'train_s': round(train_s, 1),
              'translate_s': round(translate_s, 1),
              'frames_per_s': round(frames / max(translate_s, 1e-6), 1),
              'wall_s': round(time.monotonic() - t_start, 1), 'budget_s': budget,
              'translations_bytes': written['bytes'], 'jpeg_quality': written['jpeg_quality'],
              'device': str(device),
              'imported': sorted(m for m in sys.modules if m.split('.')[0] in
                                 ('mujoco', 'rosbags'))}
    write_result(args.out / 'neural_sim_gpu.json', result, torch_machine())
    print(json.dumps({k: v for k, v in result.items() if k != 'imported'}))
    print(result['imported'])
    return 0


if __name__ == '__main__':
    sys.exit(main())
