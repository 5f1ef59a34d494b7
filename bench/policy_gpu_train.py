"""Train the policy recipe at a larger size on one CUDA GPU from a pack, in a wall budget.

    python3 bench/policy_gpu_train.py --pack /tmp/pack.npz --out $OUT \\
        [--config config/policy_train_gpu16.yaml] [--minutes 6] [--work /tmp/policy_gpu_work]

Needs only torch, diffusers, numpy, safetensors, cv2, yaml and the comsim_core/comsim_policy
sources (no MuJoCo, no rosbags: the episodes arrive decoded, in a ``policy_gpu_pack`` pack).
The loop is the trainer's own (``train_prepared``) on the pack's train/val split with its
normaliser (fitted on the CPU machine), in bf16 autocast on CUDA. A short first run measures
the step rate; the rest of ``--minutes`` sets the step count (the learning-rate schedule
follows it). ``--out`` receives what comes back:
``checkpoint/`` (the EMA weights as fp16 safetensors, normaliser statistics kept fp32, and
config.yaml; ``PolicyRunner.load`` reads it on the CPU machine, casting to fp32),
``log.jsonl`` and ``policy_gpu_train.json`` (steps, samples/s, wall, losses, GPU).
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

import torch
from policy_gpu_pack import read_pack
from provenance import ROOT, torch_machine, write_result
from safetensors import safe_open
from safetensors.torch import save_file

from comsim_core.errors import UserError, cli_main
from comsim_policy.checkpoint import CONFIG, WEIGHTS, from_pretrained
from comsim_policy.config import PolicyConfig
from comsim_policy.inference import default_device, limit_cpu_threads
from comsim_policy.model.policy import DiffusionPolicyModel
from comsim_policy.preprocessing import METADATA_KEY
from comsim_policy.training.train import run_config, train_prepared

# what the data decided, taken from the pack's config (prepare() filled or applied them)
FROM_PACK = ('joint_names', 'camera_topics', 'camera_sizes', 'joint_topic', 'command_topic',
             'control_hz', 'tasks', 'normalization', 'robot_model')
HEADER_BYTES = 64 * 1024    # safetensors header and metadata, generously
SAFETY = 0.9                # of the measured rate's steps in the time left (validation, saves)


def gpu_config(size: PolicyConfig, packed: PolicyConfig, name: str) -> PolicyConfig:
    """``size``'s model and training settings on the pack's data contract."""
    if list(size.image_size) != list(packed.image_size):
        raise UserError(f'{name}: image_size {size.image_size} but the pack\'s frames are '
                        f'{packed.image_size}: pack at that size or set image_size to it')
    merged = size.to_dict()
    merged.update({k: packed.to_dict()[k] for k in FROM_PACK})
    merged['train'].update({k: packed.to_dict()['train'][k]
                            for k in ('mixture_counts', 'val_fraction', 'include_failed')})
    return PolicyConfig.from_dict(merged, name=name)


def fp16_bytes(config: PolicyConfig) -> tuple[int, int]:
    """(parameters, bytes of the fp16 checkpoint: parameters fp16, buffers fp32, header)."""
    model = DiffusionPolicyModel(config)
    n = sum(p.numel() for p in model.parameters())
    return n, 2 * n + 4 * sum(b.numel() for b in model.buffers()) + HEADER_BYTES


def export_fp16(work: Path, out: Path) -> int:
    """The EMA checkpoint in ``work`` as fp16 weights (buffers, the normaliser's statistics,
    stay fp32) + config.yaml in ``out``; the weights' size in bytes."""
    model = from_pretrained(work, 'cpu')
    with safe_open(str(work / WEIGHTS), 'pt') as f:   # one name per shared tensor, as saved
        names = list(f.keys())
    params = {name for name, _ in model.named_parameters(remove_duplicate=False)}
    state = model.state_dict()
    tensors = {k: (state[k].half() if k in params else state[k]).contiguous() for k in names}
    out.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(out / WEIGHTS),
              metadata={'format': 'pt', 'kind': 'comsim_diffusion_policy', 'dtype': 'float16',
                        METADATA_KEY: model.preprocessor.to_json()})
    shutil.copyfile(work / CONFIG, out / CONFIG)
    return (out / WEIGHTS).stat().st_size


def amp_dtype(amp: str, device: torch.device) -> torch.dtype | None:
    if amp == 'off' or (amp == 'auto' and device.type != 'cuda'):
        return None
    return torch.bfloat16


def rate_of(history: list[dict], batch: int) -> float:
    """Steps per second over the last logged window."""
    rates = [h['samples_per_s'] for h in history if 'samples_per_s' in h]
    if not rates:
        raise RuntimeError('the calibration run logged no rate')
    return rates[-1] / batch


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--pack', type=Path, required=True, help='from bench/policy_gpu_pack.py')
    ap.add_argument('--config', type=Path, default=ROOT / 'config' / 'policy_train_gpu16.yaml',
                    help='model and training settings (the size)')
    ap.add_argument('--out', type=Path, default=ROOT / 'output' / 'policy_gpu',
                    help='checkpoint/, log.jsonl, policy_gpu_train.json')
    ap.add_argument('--work', type=Path, default=Path('/tmp/policy_gpu_work'),
                    help='training directory (training state, best/); must be new or empty')
    ap.add_argument('--minutes', type=float, default=6.0, help='training wall budget')
    ap.add_argument('--calibration-steps', type=int, default=60)
    ap.add_argument('--max-steps', type=int, default=None,
                    help='a fixed step count instead of the budget')
    ap.add_argument('--device', default=None, help="cuda | cpu | auto (default: config's)")
    ap.add_argument('--amp', choices=('auto', 'bf16', 'off'), default='auto',
                    help='bf16 autocast (auto: on CUDA)')
    ap.add_argument('--max-mb', type=float, default=16.0, help='checkpoint size limit (10^6 B)')
    return ap


@cli_main('policy_gpu_train')
def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    t_start = time.monotonic()
    limit_cpu_threads()
    if args.work.exists() and any(args.work.iterdir()):
        raise UserError(f'--work {args.work} is not empty: give a new directory')
    packed, data, normalizer, meta = read_pack(args.pack)
    t_loaded = time.monotonic()
    config = gpu_config(PolicyConfig.from_yaml(args.config), packed, str(args.config))
    if args.device:
        config.train.device = args.device
    n_params, est = fp16_bytes(config)
    limit = int(args.max_mb * 1e6)
    if est > limit:
        raise UserError(f'{args.config}: {n_params / 1e6:.2f} M parameters make a {est / 1e6:.1f}'
                        f' MB fp16 checkpoint, over --max-mb {args.max_mb:g}')
    device = default_device(config.train.device)
    autocast = amp_dtype(args.amp, device)
    torch.backends.cudnn.benchmark = device.type == 'cuda'
    batch, log_every = config.train.batch_size, config.train.log_every

    t_train = time.monotonic()
    calibration = None
    if args.max_steps is not None:
        summary = train_prepared(run_config(config, args.work, False, args.max_steps), data,
                                 args.work, autocast=autocast, normalizer=normalizer)
    else:
        cal = args.calibration_steps
        config.train.log_every = max(1, cal // 3)
        first = train_prepared(run_config(config, args.work, False, cal), data, args.work,
                               autocast=autocast, normalizer=normalizer)
        rate = rate_of(first['history'], batch)
        left = args.minutes * 60 - (time.monotonic() - t_train)
        steps = cal + max(0, int(SAFETY * rate * left))
        calibration = {'steps': cal, 'steps_per_s': round(rate, 3), 'planned_steps': steps}
        resumed = run_config(config, args.work, True, steps)
        resumed.train.log_every = log_every
        summary = train_prepared(resumed, data, args.work, resume=True, autocast=autocast,
                                 normalizer=normalizer)
        summary['first_loss'] = first['first_loss']   # the history already holds the first part
    t_trained = time.monotonic()
    size = export_fp16(args.work, args.out / 'checkpoint')
    shutil.copyfile(args.work / 'log.jsonl', args.out / 'log.jsonl')
    if size > limit:
        raise UserError(f'{args.out / "checkpoint" / WEIGHTS}: {size} B, over --max-mb '
                        f'{args.max_mb:g}')
    history = summary['history']
    losses = [h['loss'] for h in history if 'loss' in h]
    vals = [h for h in history if 'val_loss' in h]
    train_s = t_trained - t_train
    result = {
        'pack': {'path': str(args.pack), 'bytes': args.pack.stat().st_size,
                 'jpeg_quality': meta['jpeg_quality'], 'data': data.summary},
        'config': str(args.config), 'model': config.to_dict()['model'],
        'image_size': config.image_size, 'crop_size': config.crop_size, 'tasks': config.tasks,
        'parameters': n_params, 'checkpoint_bytes': size, 'device': str(device),
        'amp': str(autocast).replace('torch.', '') if autocast else 'off',
        'batch_size': batch, 'steps': summary['steps'], 'calibration': calibration,
        'samples_per_s': round(summary['steps'] * batch / train_s, 1),
        'wall_s': {'load_pack': round(t_loaded - t_start, 1), 'train': round(train_s, 1),
                   'export': round(time.monotonic() - t_trained, 1),
                   'total': round(time.monotonic() - t_start, 1)},
        'budget_s': None if args.max_steps is not None else args.minutes * 60,
        'first_loss': summary['first_loss'], 'final_loss': losses[-1] if losses else None,
        'best_val_loss': summary['best_val_loss'],
        'final_val': vals[-1] if vals else None,
    }
    write_result(args.out / 'policy_gpu_train.json', result, torch_machine())
    print(json.dumps({k: result[k] for k in ('steps', 'samples_per_s', 'wall_s', 'final_loss',
                                             'best_val_loss', 'checkpoint_bytes')}))
    return 0


if __name__ == '__main__':
    sys.exit(main())
