"""Data-parallel training launched by torchrun (2 CPU processes, gloo): accelerate's prepared
model/optimizer/loader path that multi-GPU and multi-node runs take, minus the GPUs."""

import os
import subprocess
import sys
from pathlib import Path

import yaml

from comsim_neural_sim.sampling.pipeline import NeuralSimPipeline

TINY = dict(frames=4, context_frames=1, height=16, width=16, width_dim=32, depth=2, heads=2,
            patch_size=4, action_dim=7, batch_size=4, log_every=2, sample_every=10**6,
            save_every=10**6, cameras=['front'])


def test_two_process_torchrun_trains_one_checkpoint(tmp_path):
    cfg = tmp_path / 'tiny.yaml'
    cfg.write_text(yaml.safe_dump(TINY))
    torchrun = Path(sys.executable).with_name('torchrun')
    port = str(29500 + os.getpid() % 1000)
    cmd = [str(torchrun), '--nproc_per_node', '2', '--master_port', port, '-m',
           'comsim_neural_sim.training.train', '--config', str(cfg), '--data', 'synthetic:4',
           '--out', str(tmp_path / 'ckpt'), '--steps', '4']
    env = {**os.environ, 'OMP_NUM_THREADS': '1'}
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=240, env=env)
    out = run.stdout + run.stderr
    assert run.returncode == 0, out[-3000:]
    assert out.count('training on 2 process(es)') == 2, out[-3000:]   # one line per rank
    pipe = NeuralSimPipeline.from_pretrained(tmp_path / 'ckpt', device='cpu')
    assert pipe.config.cameras == ['front']
