"""Neural-sim benchmark: translation frames/s and peak memory, training samples/s, and the
composed guidance evaluated batched vs as three separate forwards.

    python bench/neural_sim.py [--config config/neural_sim.yaml] [--out OUT] [--gpu-config ...]
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time

import torch
from provenance import add_out_argument, torch_machine, write_result

from comsim_neural_sim.config import NeuralSimConfig
from comsim_neural_sim.data import synthetic_pair
from comsim_neural_sim.sampling.guidance import GuidanceWeights, compose_scores
from comsim_neural_sim.sampling.pipeline import new_pipeline
from comsim_neural_sim.training import train


def _sync(dev: torch.device) -> None:
    if dev.type == 'cuda':
        torch.cuda.synchronize()


def bench_config(cfg: NeuralSimConfig, frames: int, steps: int, train_steps: int) -> dict:
    pipe = new_pipeline(cfg)
    dev = pipe.device if not torch.cuda.is_available() else torch.device('cuda')
    pipe.to(dev)
    clip = synthetic_pair(frames, cfg.height, cfg.width, cfg.action_dim)
    if dev.type == 'cuda':
        torch.cuda.reset_peak_memory_stats()
    pipe(clip.sim[:cfg.frames], clip.actions[:cfg.frames], steps=1)   # warm-up
    _sync(dev)
    t0 = time.perf_counter()
    pipe(clip.sim, clip.actions, steps=steps, seed=0)
    _sync(dev)
    dt = time.perf_counter() - t0
    peak = (torch.cuda.max_memory_allocated() / 2**20 if dev.type == 'cuda'
            else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    # composed guidance: one batched forward vs three
    b = 1
    shape = (b, cfg.frames, cfg.model_channels, *cfg.model_hw)
    x, sim = torch.randn(shape, device=dev), torch.randn(shape, device=dev)
    act = torch.randn(b, cfg.frames, cfg.action_dim, device=dev)
    t = torch.full((b,), 500.0, device=dev)
    m = pipe.transformer
    from comsim_neural_sim.sampling.guidance import guided_prediction

    def batched():
        return guided_prediction(m, x, t, sim, act, GuidanceWeights(1.5, 1.5), 'composed')

    def separate():
        z, o = torch.zeros(b, device=dev), torch.ones(b, device=dev)
        e = [m(x, t, sim, act, s, a).sample for s, a in ((z, z), (z, o), (o, z))]
        return compose_scores(*e, 1.5, 1.5)

    timings = {}
    with torch.no_grad():
        for name, fn in (('batched', batched), ('separate', separate)):
            fn()
            _sync(dev)
            t0 = time.perf_counter()
            for _ in range(5):
                fn()
            _sync(dev)
            timings[name] = (time.perf_counter() - t0) / 5
    with tempfile.TemporaryDirectory() as tmp:
        clips = [synthetic_pair(2 * cfg.frames, cfg.height, cfg.width, cfg.action_dim, seed=i)
                 for i in range(2)]
        res = train(cfg.replace(sample_every=10**9, save_every=10**9, log_every=train_steps),
                    clips, tmp, steps=train_steps, log=lambda s: None)
    return {'height': cfg.height, 'width': cfg.width, 'window_frames': cfg.frames,
            'params_M': sum(p.numel() for p in m.parameters()) / 1e6, 'device': str(dev),
            'episode_frames': frames, 'denoise_steps': steps,
            'translate_frames_per_s': frames / dt, 'translate_s': dt, 'peak_mem_MiB': peak,
            'composed_batched_ms': timings['batched'] * 1e3,
            'composed_separate_ms': timings['separate'] * 1e3,
            'separate_over_batched': timings['separate'] / timings['batched'],
            'train_samples_per_s': res.samples_per_s, 'train_batch': cfg.batch_size}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--config', default='config/neural_sim.yaml')
    ap.add_argument('--gpu-config', default='config/neural_sim_gpu.yaml')
    ap.add_argument('--frames', type=int, default=32, help='episode length to translate')
    ap.add_argument('--steps', type=int, default=10, help='denoising steps')
    ap.add_argument('--train-steps', type=int, default=10)
    add_out_argument(ap, __file__)
    args = ap.parse_args()
    results = {'cpu_default': bench_config(NeuralSimConfig.from_yaml(args.config), args.frames,
                                           args.steps, args.train_steps)}
    if torch.cuda.is_available():
        results['gpu_240x320'] = bench_config(NeuralSimConfig.from_yaml(args.gpu_config),
                                              args.frames, args.steps, args.train_steps)
    print(json.dumps(results, indent=1))
    write_result(args.out, {'results': results}, torch_machine())
    return 0


if __name__ == '__main__':
    sys.exit(main())
