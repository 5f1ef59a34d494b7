"""Pack the episodes a policy trains on into one ``.npz`` for a machine without them (the GPU).

    .venv/bin/python bench/policy_gpu_pack.py --data WORK/move_card/gt:gt --tasks move_card \\
        --pack .gpu/pack.npz [--config config/policy_train.yaml] [--jpeg-quality 90]

The trainer's own ``prepare()`` runs here (FrameCache decode at the config's image size, task
and success filters, mixture counts, the seeded train/val split), so the GPU trains on exactly
the episodes and split the CPU trainer would. The pack holds every episode's state, action and
t_ns arrays, its images per camera (raw uint8, or JPEG bytes: rendered frames barely compress
losslessly, 1.3x with deflate, and the device tool carries 64 MiB a call), the filled
``PolicyConfig`` (camera_sizes...) and the data summary as JSON strings, and the normaliser
fitted here (``fit_normalizer``: 'limits' needs the robot model, ``normalization_data`` more
episodes, neither of which the GPU machine has). Nothing is pickled: ``read_pack`` loads it
with ``allow_pickle=False``.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch
from jpeg_frames import decode_jpeg, encode_jpeg
from provenance import ROOT

from comsim_core.errors import UserError, cli_main
from comsim_policy.config import PolicyConfig
from comsim_policy.data.cache import FrameCache
from comsim_policy.data.episode_arrays import EpisodeArrays
from comsim_policy.normalizer import PolicyNormalizer
from comsim_policy.training.data_setup import DataSpec, PreparedData, prepare
from comsim_policy.training.train import fit_normalizer

FORMAT = 1
SPLITS = ('train', 'val')


class PackError(UserError, ValueError):
    """A pack file is missing, not a pack, or of another format (names the file and why)."""


def pack_arrays(data: PreparedData, config: PolicyConfig, normalizer: PolicyNormalizer,
                jpeg_quality: int = 0) -> dict[str, np.ndarray]:
    """The pack's named arrays: episode ``k``'s under ``e{k:04d}_``, the normaliser's under
    ``normalizer_``; JSON as 0-d strings."""
    arrays = {f'normalizer_{k}': v.numpy() for k, v in normalizer.state_dict().items()}
    index = []
    for k, (split, ep) in enumerate([('train', e) for e in data.train]
                                    + [('val', e) for e in data.val]):
        p = f'e{k:04d}_'
        index.append({'name': ep.name, 'source': ep.source, 'split': split,
                      'native_sizes': ep.native_sizes, 'commands_used': ep.commands_used})
        arrays[p + 'state'] = np.asarray(ep.state, dtype=np.float32)
        arrays[p + 'action'] = np.asarray(ep.action, dtype=np.float32)
        arrays[p + 't_ns'] = np.asarray(ep.t_ns, dtype=np.int64)
        for i, cam in enumerate(config.camera_topics):
            frames = np.asarray(ep.images[cam])
            if jpeg_quality:
                arrays[p + f'cam{i}_jpeg'], arrays[p + f'cam{i}_jpeg_sizes'] = \
                    encode_jpeg(frames, jpeg_quality)
            else:
                arrays[p + f'cam{i}'] = frames
    meta = {'format': FORMAT, 'jpeg_quality': int(jpeg_quality), 'episodes': index,
            'config': config.to_dict(), 'summary': data.summary}
    arrays['meta_json'] = np.array(json.dumps(meta))
    return arrays


def write_pack(path: Path, data: PreparedData, config: PolicyConfig, jpeg_quality: int = 0
               ) -> int:
    """Write the pack (uncompressed zip: the JPEG bytes are the compression); its size."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f'.{path.name}.tmp')
    arrays = pack_arrays(data, config, fit_normalizer(config, data), jpeg_quality)
    with tmp.open('wb') as fh:
        np.savez(fh, **arrays)
    tmp.replace(path)
    return path.stat().st_size


def read_pack(path: Path | str) -> tuple[PolicyConfig, PreparedData, PolicyNormalizer, dict]:
    """(the filled config the pack was made with, its train/val episodes, the normaliser
    fitted on them, its meta)."""
    path = Path(path)
    if not path.is_file():
        raise PackError(f'no pack at {path}')
    try:
        z = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise PackError(f'{path}: not a policy pack (.npz): {exc}') from exc
    with z:
        if 'meta_json' not in z.files:
            raise PackError(f'{path}: not a policy pack: no meta_json')
        meta = json.loads(str(z['meta_json']))
        if meta.get('format') != FORMAT:
            raise PackError(f'{path}: pack format {meta.get("format")}, expected {FORMAT}')
        config = PolicyConfig.from_dict(meta['config'], name=f'{path}:config')
        try:
            normalizer, data = _unpack(z, meta, config)
        except KeyError as exc:   # numpy names the missing array
            raise PackError(f'{path}: incomplete policy pack: {exc.args[0]}') from exc
    return config, data, normalizer, meta


def _unpack(z: np.lib.npyio.NpzFile, meta: dict, config: PolicyConfig
            ) -> tuple[PolicyNormalizer, PreparedData]:
    normalizer = PolicyNormalizer(config.state_dim, config.action_dim)
    normalizer.load_state_dict({k: torch.from_numpy(z[f'normalizer_{k}'])
                                for k in normalizer.state_dict()})
    split: dict[str, list[EpisodeArrays]] = {s: [] for s in SPLITS}
    for k, ep in enumerate(meta['episodes']):
        p = f'e{k:04d}_'
        images = {}
        for i, cam in enumerate(config.camera_topics):
            if meta['jpeg_quality']:
                images[cam] = decode_jpeg(z[p + f'cam{i}_jpeg'], z[p + f'cam{i}_jpeg_sizes'])
            else:
                images[cam] = z[p + f'cam{i}']
        split[ep['split']].append(EpisodeArrays(
            ep['name'], ep['source'], images, z[p + 'state'], z[p + 'action'], z[p + 't_ns'],
            ep['native_sizes'], ep['commands_used']))
    return normalizer, PreparedData(split['train'], split['val'], meta['summary'])


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--data', nargs='+', required=True, metavar='DIR[:source]',
                    help='episode directories, as comsim-policy-train takes them')
    ap.add_argument('--config', type=Path, default=ROOT / 'config' / 'policy_train.yaml',
                    help='the recipe whose data settings apply (image size, tasks, split)')
    ap.add_argument('--tasks', nargs='+', default=None, help='default: the config\'s')
    ap.add_argument('--cache-dir', default=None, help="frame cache (default: the config's)")
    ap.add_argument('--pack', type=Path, default=ROOT / 'output' / 'policy_gpu' / 'pack.npz')
    ap.add_argument('--jpeg-quality', type=int, default=90,
                    help='JPEG quality of the packed frames; 0 = raw uint8 (default 90)')
    return ap


@cli_main('policy_gpu_pack')
def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if not 0 <= args.jpeg_quality <= 100:
        raise UserError(f'--jpeg-quality {args.jpeg_quality}: expected 0 (raw) to 100')
    config = PolicyConfig.from_yaml(args.config)
    if args.tasks is not None:
        config.tasks = list(args.tasks)
    if args.cache_dir is not None:
        config.train.cache_dir = args.cache_dir
    cache = FrameCache(config.train.cache_dir or None, config)
    t0 = time.perf_counter()
    data = prepare([DataSpec.parse(d) for d in args.data], config, cache)
    t1 = time.perf_counter()
    size = write_pack(args.pack, data, config, args.jpeg_quality)
    frames = data.summary['frames'] * len(config.camera_topics)
    raw = frames * int(np.prod(config.image_size)) * 3
    print(json.dumps({'pack': str(args.pack), 'bytes': size, 'raw_image_bytes': raw,
                      'camera_frames': frames, 'bytes_per_camera_frame': round(size / frames),
                      'jpeg_quality': args.jpeg_quality, 'prepare_s': round(t1 - t0, 1),
                      'write_s': round(time.perf_counter() - t1, 1), 'data': data.summary}))
    return 0


if __name__ == '__main__':
    sys.exit(main())
