"""Diffusion Policy training throughput and data-loader throughput (cache vs no cache).

    .venv/bin/python bench/policy_training.py [--episodes 3] [--frames 40] [--steps 20]
        [--out bench/results/policy_training.json]

Synthetic recorded episodes (two cameras 240x320 rgb8 at 10 Hz, joint states 50 Hz,
JointTrajectory commands; fixtures/policy_episodes.py) with the default CPU config.
No cache = decode every episode from its bag (what each epoch would cost without it);
cache = memory-mapped arrays from the frame cache.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import torch
from provenance import ROOT, add_out_argument, torch_machine, use_fixtures, write_result
from torch.utils.data import DataLoader

from comsim_policy.config import PolicyConfig
from comsim_policy.data.cache import FrameCache
from comsim_policy.data.dataset import WindowDataset
from comsim_policy.training.data_setup import DataSpec
from comsim_policy.training.train import train

use_fixtures()
from fixtures.policy_episodes import write_episode  # noqa: E402

CAMS = ('/cameras/front/image_raw', '/cameras/side/image_raw')


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--episodes', type=int, default=3)
    p.add_argument('--frames', type=int, default=40)
    p.add_argument('--steps', type=int, default=20)
    p.add_argument('--threads', type=int, default=2)
    add_out_argument(p, __file__)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    res: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        paths = [write_episode(tmp / 'eps', s, args.frames, (240, 320), CAMS)
                 for s in range(args.episodes)]
        cfg = PolicyConfig.from_yaml(ROOT / 'config/policy_train.yaml')
        n = args.episodes * args.frames
        t = time.perf_counter()
        eps = [FrameCache(None, cfg).get(q) for q in paths]
        res['no_cache_frames_per_s'] = round(n / (time.perf_counter() - t), 1)
        cache = FrameCache(tmp / 'cache', cfg)
        for q in paths:
            cache.get(q)
        t = time.perf_counter()
        eps = [cache.get(q) for q in paths]
        res['cache_hit_frames_per_s'] = round(n / (time.perf_counter() - t), 1)
        ds = WindowDataset(eps, cfg, train=True)
        loader = DataLoader(ds, batch_size=32, shuffle=True)
        t, k = time.perf_counter(), 0
        for _ in range(3):
            for b in loader:
                k += b['state'].shape[0]
        res['loader_windows_per_s_from_cache'] = round(k / (time.perf_counter() - t), 1)
        cfg.train.max_steps = args.steps
        cfg.train.log_every = args.steps
        cfg.train.val_fraction = 0.0
        cfg.train.cache_dir = str(tmp / 'cache')
        cfg.train.device = 'auto'
        t = time.perf_counter()
        s = train(cfg, [DataSpec(tmp / 'eps')], tmp / 'ckpt', log=lambda m: None)
        res['train_samples_per_s'] = round(s['history'][-1]['samples_per_s'], 1)
        res['train_wall_s'] = round(time.perf_counter() - t, 1)
        res['batch_size'] = cfg.train.batch_size
    out = {'episodes': args.episodes, 'frames_per_episode': args.frames, 'results': res}
    print(json.dumps(out, indent=1))
    write_result(args.out, out, torch_machine())
    return 0


if __name__ == '__main__':
    sys.exit(main())
