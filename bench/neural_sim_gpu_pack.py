"""The CPU side of the neural simulator's GPU path: pack what it needs, unpack what it made.

    .venv/bin/python bench/neural_sim_gpu_pack.py pack --paired RUN/twin/paired \\
        --sim RUN/twin/sim [--episodes NAME...] --pixels 96 128 --pack .gpu/ns_pack.npz
    python3 bench/neural_sim_gpu.py --pack .gpu/ns_pack.npz --out $OUT      # on the GPU
    .venv/bin/python bench/neural_sim_gpu_pack.py unpack --translations $OUT/translations.npz \\
        --sim RUN/twin/sim --out RUN/neural_sim_gpu/pseudo_real

``pack`` reads the paired (real, twin) episodes and the sim episodes to translate (rosbags,
here), resizes every frame to ``--pixels`` (the policy's input) and stores it as JPEG with the
actions and stamps: one ``.npz``, no pickles. ``unpack`` writes one pseudo-real episode per
translated sim episode in the recording format, as ``comsim-translate-episodes`` does: the sim
bag with its images replaced, upsampled to the camera's size and, unless ``--no-sim-detail``,
with the sim's detail above ``--pixels`` kept (``keep_sim_detail``), so the CPU run can use
GPU-made translations in place of its own.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import cv2
import numpy as np
from jpeg_frames import decode_jpeg, encode_jpeg

from comsim_core.errors import UserError, cli_main
from comsim_neural_sim.data.frames import keep_sim_detail

# The GPU machine imports ``read_pack`` and ``write_translations`` from here with neither
# rosbags nor MuJoCo installed: what reads or writes episodes is imported where it is used.

FORMAT = 1
COMMAND_TOPIC = '/joint_trajectory_controller/joint_trajectory'


class PackError(UserError, ValueError):
    """A pack or translations file that is missing, not one, or of another format."""


def resize(frames: np.ndarray, pixels: tuple[int, int]) -> np.ndarray:
    """(T, H, W, 3) -> (T, h, w, 3): area-averaged when shrinking, bilinear when growing."""
    h, w = pixels
    if frames.shape[1:3] == (h, w):
        return frames
    shrink = h < frames.shape[1]
    mode = cv2.INTER_AREA if shrink else cv2.INTER_LINEAR
    return np.stack([cv2.resize(f, (w, h), interpolation=mode) for f in frames])


def meta_of(z: np.lib.npyio.NpzFile, path: Path, kind: str) -> dict:
    if 'meta' not in z.files:
        raise PackError(f'{path}: not a neural-sim {kind} (no meta entry)')
    meta = json.loads(str(z['meta']))
    if meta.get('format') != FORMAT or meta.get('kind') != kind:
        raise PackError(f'{path}: {meta.get("kind")!r} format {meta.get("format")!r}, '
                        f'expected a neural-sim {kind} of format {FORMAT}')
    return meta


def open_npz(path: Path, kind: str) -> tuple[np.lib.npyio.NpzFile, dict]:
    try:
        z = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise PackError(f'{path}: no such {kind} file') from None
    except (OSError, ValueError) as exc:
        raise PackError(f'{path}: not a {kind} (.npz): {exc}') from None
    return z, meta_of(z, path, kind)


# --- pack -------------------------------------------------------------------------------------


def pack(paired_dir: Path, sims: list[Path], pixels: tuple[int, int], out: Path,
         quality: int = 90) -> dict:
    """Write the pack; returns its meta."""
    from comsim_core.episodes import find_episodes
    from comsim_neural_sim.data.clips import load_paired_episode
    from comsim_neural_sim.translate.episode import camera_topics, read_sim_episode

    arrays: dict[str, np.ndarray] = {}
    paired_eps = find_episodes(paired_dir)
    if not paired_eps:
        raise PackError(f'{paired_dir}: no paired episodes')
    cameras = sorted(camera_topics(_topics(paired_eps[0]), '/real/cameras/'))
    paired = []
    for ep in paired_eps:
        for cam in cameras:
            clip = load_paired_episode(ep, cam, COMMAND_TOPIC)
            k = len(paired)
            for stream in ('real', 'sim'):
                data, sizes = encode_jpeg(resize(getattr(clip, stream), pixels), quality)
                arrays[f'paired{k}_{stream}'], arrays[f'paired{k}_{stream}_n'] = data, sizes
            arrays[f'paired{k}_actions'] = clip.actions.astype(np.float32)
            paired.append({'name': ep.name, 'camera': cam})
    episodes = []
    for j, path in enumerate(sims):
        sim = read_sim_episode(path, COMMAND_TOPIC)
        topics = sorted(sim.images)
        for k, topic in enumerate(topics):
            stamps, frames = sim.images[topic]
            data, sizes = encode_jpeg(resize(frames, pixels), quality)
            arrays[f'sim{j}_{k}'], arrays[f'sim{j}_{k}_n'] = data, sizes
            arrays[f'sim{j}_{k}_stamps'] = stamps.astype(np.int64)
            arrays[f'sim{j}_{k}_actions'] = sim.actions[topic].astype(np.float32)
        episodes.append({'name': path.name, 'topics': topics})
    meta = {'format': FORMAT, 'kind': 'pack', 'pixels': list(pixels), 'cameras': cameras,
            'command_topic': COMMAND_TOPIC, 'jpeg_quality': quality, 'paired': paired,
            'episodes': episodes}
    out.parent.mkdir(parents=True, exist_ok=True)
    np.savez(out, meta=np.array(json.dumps(meta)), **arrays)
    return meta


def _topics(path: Path) -> list[str]:
    from comsim_core.episodes import Episode
    with Episode.open(path) as ep:
        return list(ep.topics)


def read_pack(path: Path) -> tuple[dict, list[dict], list[dict]]:
    """(meta, paired clips as dicts of arrays, sim episodes as dicts of arrays) — torch-free and
    rosbags-free: the GPU machine reads it with numpy and OpenCV only."""
    z, meta = open_npz(path, 'pack')
    paired = [{'name': p['name'], 'camera': p['camera'],
               'real': decode_jpeg(z[f'paired{k}_real'], z[f'paired{k}_real_n']),
               'sim': decode_jpeg(z[f'paired{k}_sim'], z[f'paired{k}_sim_n']),
               'actions': z[f'paired{k}_actions']} for k, p in enumerate(meta['paired'])]
    sims = []
    for j, e in enumerate(meta['episodes']):
        sims.append({'name': e['name'], 'images': {
            t: (z[f'sim{j}_{k}_stamps'], decode_jpeg(z[f'sim{j}_{k}'], z[f'sim{j}_{k}_n']))
            for k, t in enumerate(e['topics'])},
            'actions': {t: z[f'sim{j}_{k}_actions'] for k, t in enumerate(e['topics'])}})
    return meta, paired, sims


# --- unpack -----------------------------------------------------------------------------------


def write_translations(path: Path, translated: list[tuple[str, dict[str, np.ndarray]]],
                       meta: dict, max_mb: float) -> dict:
    """JPEG every translated frame at the highest quality whose file fits ``max_mb``."""
    for quality in (90, 80, 70, 60, 50, 40, 30):
        arrays, episodes = {}, []
        for j, (name, frames) in enumerate(translated):
            topics = sorted(frames)
            for k, topic in enumerate(topics):
                arrays[f'tr{j}_{k}'], arrays[f'tr{j}_{k}_n'] = encode_jpeg(frames[topic],
                                                                           quality)
            episodes.append({'name': name, 'topics': topics})
        size = sum(a.nbytes for a in arrays.values())
        if size <= max_mb * 2**20 or quality == 30:
            break
    full = {**meta, 'format': FORMAT, 'kind': 'translations', 'jpeg_quality': quality,
            'episodes': episodes, 'bytes': int(size)}
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, meta=np.array(json.dumps(full)), **arrays)
    return full


def unpack(translations: Path, sim_root: Path, out: Path, sim_detail: bool = True,
           log=print) -> list[Path]:
    """One pseudo-real episode per translated sim episode under ``out``."""
    from comsim_core.episodes import find_episodes
    from comsim_neural_sim.translate.episode import read_sim_episode, write_translated

    z, meta = open_npz(translations, 'translations')
    by_name = {p.name: p for p in find_episodes(sim_root)}
    h, w = meta['pixels']
    written = []
    for j, e in enumerate(meta['episodes']):
        if e['name'] not in by_name:
            raise PackError(f'{translations}: episode {e["name"]} is not under {sim_root}')
        sim = read_sim_episode(by_name[e['name']], meta.get('command_topic', COMMAND_TOPIC))
        frames = {}
        for k, topic in enumerate(e['topics']):
            small = decode_jpeg(z[f'tr{j}_{k}'], z[f'tr{j}_{k}_n'])
            native = sim.images[topic][1]
            if len(small) != len(native):
                raise PackError(f'{translations}: {e["name"]} {topic} has {len(small)} '
                                f'translated frames, the sim episode {len(native)}')
            big = resize(small, native.shape[1:3])
            frames[topic] = keep_sim_detail(big, native, h, w) if sim_detail else big
        prov = {'checkpoint': None, 'made_on': meta.get('device', 'gpu'),
                'translations': str(Path(translations).resolve()),
                'config_hash': meta.get('config_hash'), 'guidance': meta.get('guidance'),
                'steps': meta.get('sample_steps'), 'seed': meta.get('seed', 0),
                'trained_cameras': meta.get('cameras'), 'pixels': [h, w],
                'sim_detail': bool(sim_detail)}
        written.append(write_translated(sim, frames, out, prov))
        log(f'unpacked {e["name"]} -> {written[-1]}')
    return written


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest='command', required=True)
    p = sub.add_parser('pack', help='paired + sim episodes -> one .npz for the GPU')
    p.add_argument('--paired', type=Path, required=True)
    p.add_argument('--sim', type=Path, required=True, help='sim episodes (a folder)')
    p.add_argument('--episodes', nargs='*', help='only these sim episode names')
    p.add_argument('--pixels', type=int, nargs=2, default=[96, 128], metavar=('H', 'W'))
    p.add_argument('--pack', type=Path, required=True)
    p.add_argument('--jpeg-quality', type=int, default=90)
    u = sub.add_parser('unpack', help='translations .npz -> pseudo-real episodes')
    u.add_argument('--translations', type=Path, required=True)
    u.add_argument('--sim', type=Path, required=True, help='the sim episodes that were packed')
    u.add_argument('--out', type=Path, required=True)
    u.add_argument('--no-sim-detail', action='store_true')
    return ap


@cli_main('neural_sim_gpu_pack')
def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == 'pack':
        from comsim_core.episodes import find_episodes
        sims = find_episodes(args.sim)
        if args.episodes:
            wanted = set(args.episodes)
            sims = [p for p in sims if p.name in wanted]
        if not sims:
            raise PackError(f'{args.sim}: no sim episodes to pack')
        meta = pack(args.paired, sims, tuple(args.pixels), args.pack, args.jpeg_quality)
        print(f'packed {len(meta["paired"])} paired clips and {len(meta["episodes"])} sim '
              f'episodes at {args.pixels[0]}x{args.pixels[1]} into {args.pack} '
              f'({args.pack.stat().st_size / 2**20:.1f} MiB)')
    else:
        done = unpack(args.translations, args.sim, args.out, not args.no_sim_detail)
        print(f'{len(done)} pseudo-real episodes under {args.out}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
