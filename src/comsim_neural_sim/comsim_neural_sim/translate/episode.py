"""Translate sim episodes into pseudo-real ones, keeping everything but the pixels.

Every non-image message is copied byte-for-byte with its log time, so actions, joint states,
camera info and timestamps of a pseudo-real episode are exactly those of its sim source; each
camera image is re-encoded (rgb8) from the translated frame under the original header. Output
is written into ``<out>/.partial/<name>`` and renamed when complete, so an interrupted run
resumes by skipping finished episodes and redoing only the unfinished one.
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
from rosbags.rosbag2 import StoragePlugin, Writer

from comsim_core.episodes import PARTIAL_DIR, Episode, find_episodes, is_complete
from comsim_core.episodes.distro import conform_bag, rosbags_version
from comsim_core.episodes.encode import rgb8_image_cdr
from comsim_core.episodes.sidecar import read_sidecar, write_sidecar

from ..errors import MissingStreamError, NeuralSimError
from ..sampling.pipeline import NeuralSimPipeline
from ..sampling.translate import SIM_MODES, SimEpisode, config_hash, translate_frames

IMAGE = 'sensor_msgs/msg/Image'
Log = Callable[[str], None]


def camera_topics(topics: Sequence[str], prefix: str = '/cameras/') -> dict[str, str]:
    """camera name -> image topic, for topics shaped ``<prefix><cam>/image_raw``."""
    return {t[len(prefix):-len('/image_raw')]: t for t in topics
            if t.startswith(prefix) and t.endswith('/image_raw')}


def actions_at(stamps: np.ndarray, cmd_t: np.ndarray | None, cmd_q: np.ndarray | None,
               joint_t: np.ndarray, joint_q: np.ndarray) -> np.ndarray:
    """Command in force at each stamp; the measured joint position before the first command."""
    j_idx = np.clip(np.searchsorted(joint_t, stamps, side='right') - 1, 0, len(joint_t) - 1)
    out = joint_q[j_idx].astype(np.float32)
    if cmd_t is not None and len(cmd_t):
        c_idx = np.searchsorted(cmd_t, stamps, side='right') - 1
        ok = c_idx >= 0
        out[ok] = cmd_q[c_idx[ok]]
    return out


def read_sim_episode(path: str | Path, command_topic: str, joint_topic: str = '/joint_states',
                     prefix: str = '/cameras/') -> SimEpisode:
    """Frames, stamps and actions of a sim (recording-layout) episode; clear errors if absent."""
    path = Path(path)
    with Episode.open(path) as ep:
        cams = camera_topics(ep.topics, prefix)
        missing = [t for t in (joint_topic,) if t not in ep.topics]
        if not cams:
            missing.append(f'{prefix}<camera>/image_raw')
        if missing:
            raise MissingStreamError(f'sim episode {path} lacks {missing}; it has {ep.topics}')
        js = ep.joint_states(joint_topic)
        cmds = ep.commands(command_topic) if command_topic in ep.topics else None
        images, actions = {}, {}
        for topic in cams.values():
            pairs = list(ep.images(topic))
            if not pairs:
                raise MissingStreamError(f'sim episode {path}: {topic} has no images')
            stamps = np.array([p[0] for p in pairs], dtype=np.int64)
            images[topic] = (stamps, np.stack([p[1] for p in pairs]))
            actions[topic] = actions_at(stamps, None if cmds is None else cmds.t_ns,
                                        None if cmds is None else cmds.position, js.t_ns,
                                        js.position)
    return SimEpisode(path, images, actions, read_sidecar(path) or {})


def checkpoint_provenance(pipe: NeuralSimPipeline, checkpoint: str | Path | None,
                          weights: dict[str, float], steps: int, seed: int, mode: str
                          ) -> dict[str, Any]:
    return {'checkpoint': str(Path(checkpoint).resolve()) if checkpoint else None,
            'config_hash': config_hash(pipe), 'guidance': {'mode': mode, **weights},
            'steps': int(steps), 'seed': int(seed), 'trained_cameras': list(pipe.config.cameras)}


def write_translated(sim: SimEpisode, translated: dict[str, np.ndarray], out_dir: Path,
                     provenance: dict[str, Any]) -> Path:
    """Copy the sim bag with images replaced; ``.partial`` first, renamed when complete."""
    name = sim.path.name
    final, partial = out_dir / name, out_dir / PARTIAL_DIR / name
    if partial.exists():
        shutil.rmtree(partial)
    partial.parent.mkdir(parents=True, exist_ok=True)
    index = {topic: {int(s): i for i, s in enumerate(sim.images[topic][0])}
             for topic in translated}
    storage = StoragePlugin.SQLITE3 if list(sim.path.glob('*.db3')) else StoragePlugin.MCAP
    distro = str(sim.sidecar.get('distro') or 'kilted')  # the sim bag's; older ones: kilted
    with Episode.open(sim.path) as ep, \
            Writer(partial, version=rosbags_version(distro), storage_plugin=storage) as writer:
        conns = {}
        for c in ep.connections:
            if c.topic not in conns:
                conns[c.topic] = writer.add_connection(
                    c.topic, c.msgtype, msgdef=c.msgdef.data, rihs01=c.digest,
                    serialization_format=c.ext.serialization_format,
                    offered_qos_profiles=c.ext.offered_qos_profiles)
        for topic, msgtype, t, raw in ep.raw_messages(ep.topics):
            if topic in translated:
                if msgtype != IMAGE:
                    raise NeuralSimError(f'{sim.path}: {topic} is {msgtype}; only '
                                         f'{IMAGE} streams can be translated')
                msg = ep.decode(raw, msgtype, topic)
                st = msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec
                frame = translated[topic][index[topic][int(st or t)]]
                raw = rgb8_image_cdr(frame, st, msg.header.frame_id)
            writer.write(conns[topic], t, raw)
    conform_bag(partial, distro)
    side = dict(sim.sidecar)
    meta = dict(side.get('metadata') or {})
    meta.update(source='pseudo_real', sim_source=meta.get('source', 'sim'),
                provenance={**provenance, 'source_episode': str(sim.path.resolve())})
    side.update(status='complete', episode=name, metadata=meta, translated_at=time.strftime(
        '%Y-%m-%dT%H:%M:%S%z'))
    side.pop('summary', None)  # byte sizes differ; the streams are those of the source
    write_sidecar(partial, side)
    if final.exists():
        shutil.rmtree(final)
    os.replace(partial, final)
    return final


def _load(pipeline: NeuralSimPipeline | str | Path, config: Any = None) -> NeuralSimPipeline:
    if isinstance(pipeline, NeuralSimPipeline):
        if config is not None:
            config.check_compatible(pipeline.config, what='pipeline')
        return pipeline
    return NeuralSimPipeline.from_pretrained(pipeline, config=config)


def translate_episode(sim_episode: str | Path, pipeline: NeuralSimPipeline | str | Path,
                      out_dir: str | Path, weights: dict[str, float] | None = None,
                      steps: int = 10, seed: int = 0, mode: str = 'composed',
                      checkpoint: str | Path | None = None, config: Any = None) -> Path:
    """Translate one sim episode into ``out_dir/<name>``; returns the output episode."""
    return translate_dir([sim_episode], pipeline, out_dir, weights, steps, seed, mode,
                         checkpoint=checkpoint, config=config, log=lambda s: None)[0]


def translate_dir(sim_episodes: str | Path | Sequence[str | Path],
                  pipeline: NeuralSimPipeline | str | Path, out_dir: str | Path,
                  weights: dict[str, float] | None = None, steps: int = 10, seed: int = 0,
                  mode: str = 'composed', batch: int = 4, checkpoint: str | Path | None = None,
                  config: Any = None, command_topic: str | None = None,
                  log: Log = print, sim_detail: bool | None = None, workers: int = 1
                  ) -> list[Path]:
    """Translate every sim episode (a directory, or a list); complete outputs are skipped.

    Episodes are translated ``batch`` at a time (one batched generation per camera).
    ``sim_detail`` (default: the checkpoint config's) keeps the sim's detail above the model's
    resolution (``translate_frames``). ``workers`` > 1 (with a checkpoint folder as
    ``pipeline``) translates in that many processes of one torch thread each, every process a
    contiguous run of whole batches: the same batches as one process makes, so the same frames.
    """
    if isinstance(sim_episodes, (str, Path)):
        if not Path(sim_episodes).is_dir():
            raise FileNotFoundError(f'no sim-episode directory at {sim_episodes}')
        eps = find_episodes(sim_episodes)
    else:
        eps = [Path(p) for p in sim_episodes]
    if not eps:
        raise NeuralSimError(f'no sim episodes (metadata.yaml) under {sim_episodes}')
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    if checkpoint is None and not isinstance(pipeline, NeuralSimPipeline):
        checkpoint = pipeline
    pipe = _load(pipeline, config)
    w = {'w_action': 1.0, 'w_sim': 1.0, **(weights or {})}
    w.setdefault('w_joint', w['w_action'])
    detail = pipe.config.sim_detail if sim_detail is None else bool(sim_detail)
    prov = {**checkpoint_provenance(pipe, checkpoint, w, steps, seed, mode),
            'sim_detail': detail and mode in SIM_MODES}
    cmd = command_topic or pipe.config.command_topic
    todo = [p for p in eps if not is_complete(out_dir / p.name)]
    for p in eps:
        if p not in todo:
            log(f'skip {p.name}: already translated')
    batch = max(1, batch)
    parts = _worker_parts(todo, batch, workers if checkpoint is not None and
                          not isinstance(pipeline, NeuralSimPipeline) else 1)
    if len(parts) > 1:
        kw = {'weights': weights, 'steps': steps, 'seed': seed, 'mode': mode, 'batch': batch,
              'config': config, 'command_topic': command_topic, 'sim_detail': sim_detail}
        log(f'translating {len(todo)} episodes in {len(parts)} processes')
        ctx = multiprocessing.get_context('spawn')
        with ProcessPoolExecutor(len(parts), mp_context=ctx) as pool:
            list(pool.map(_translate_part, [(part, checkpoint, out_dir, kw) for part in parts]))
        return [out_dir / p.name for p in eps]
    t0 = time.perf_counter()
    for i in range(0, len(todo), batch):
        group = [read_sim_episode(p, cmd) for p in todo[i:i + batch]]
        translated: list[dict[str, np.ndarray]] = [{} for _ in group]
        for topic in sorted({t for e in group for t in e.images}):
            have = [k for k, e in enumerate(group) if topic in e.images]
            outs = translate_frames(pipe, [group[k] for k in have], topic, w, steps, seed, mode,
                                    detail)
            for k, o in zip(have, outs):
                translated[k][topic] = o
        for e, tr in zip(group, translated):
            write_translated(e, tr, out_dir, prov)
        done = min(i + batch, len(todo))
        log(f'translated {done}/{len(todo)} episodes '
            f'({time.perf_counter() - t0:.1f} s, device {pipe.device})')
    return [out_dir / p.name for p in eps]


def _worker_parts(todo: list[Path], batch: int, workers: int) -> list[list[Path]]:
    """``todo`` cut into at most ``workers`` contiguous parts of whole batches."""
    batches = [todo[i:i + batch] for i in range(0, len(todo), batch)]
    n = max(1, min(workers, len(batches)))
    bounds = [round(k * len(batches) / n) for k in range(n + 1)]
    return [[p for b in batches[lo:hi] for p in b] for lo, hi in zip(bounds, bounds[1:])
            if hi > lo]


def _translate_part(job: tuple) -> list[Path]:
    """One worker's part of ``translate_dir``, on one torch thread, logging to stdout."""
    import torch  # noqa: PLC0415

    paths, checkpoint, out_dir, kw = job
    torch.set_num_threads(1)
    return translate_dir(paths, checkpoint, out_dir, log=lambda s: print(s, flush=True), **kw)
