"""Render one generated episode's ground truth: the bench lab set up with its layout replays
its joint trajectory kinematically and films every kept frame (see the package docstring)."""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import cv2
import numpy as np

from comsim_bench_lab.config import LabConfig
from comsim_bench_lab.lab import BenchLab
from comsim_bench_lab.realism import RealismProfile
from comsim_core.episodes import Episode, is_episode_dir
from comsim_core.episodes.encode import rgb8_image_cdr
from comsim_core.episodes.errors import EpisodeError
from comsim_core.episodes.images import decode_rgb, stamp_ns
from comsim_core.episodes.paired import PairedEpisodeWriter, is_complete_paired
from comsim_core.episodes.sidecar import read_sidecar
from comsim_core.episodes.tracks import JointTrack

from .cameras import lab_config_for
from .errors import GroundTruthError, MissingStreamError, NotGeneratedError
from .grip import GripTrack
from .layout import lab_objects
from .positions import POSITIONS_FILE, POSITIONS_FORMAT, frame_positions, tracked
from .sim_episode import (
    JOINT_TOPIC,
    camera_topic,
    generated_metadata,
    kept_frames,
    scan_streams,
)

SOURCE = 'bench_lab'          # sidecar ``ground_truth``: how a reader recognises these episodes
EPISODE_SOURCE = 'gt'         # metadata.source (EpisodeMeta): the bench lab filming a sim episode
SETTLE_S = 0.1                # objects come to rest before the first stamp (as the generator)
DEFAULT_LAB = 'config/bench_lab/lab.yaml'
DEFAULT_REALISM = 'config/bench_lab/realism.yaml'


@dataclass
class GroundTruthResult:
    path: Path
    skipped: bool = False
    frames: dict[str, int] = field(default_factory=dict)      # camera -> frames rendered
    wall_s: float = 0.0
    object_drift_m: dict[str, float] = field(default_factory=dict)
    success: bool | None = None       # the bench lab's check on the filmed motion


class GroundTruthRenderer:
    """Renders ground truth for sim episodes; keeps one bench lab per camera set and size."""

    def __init__(self, lab_config: LabConfig | str | Path = DEFAULT_LAB,
                 realism: RealismProfile | str | Path = DEFAULT_REALISM) -> None:
        self.config = (lab_config if isinstance(lab_config, LabConfig)
                       else LabConfig.load(lab_config))
        self.realism = (realism if isinstance(realism, RealismProfile)
                        else RealismProfile.load(realism))
        self._labs: dict[tuple, BenchLab] = {}

    def close(self) -> None:
        for lab in self._labs.values():
            lab.close()
        self._labs.clear()

    def __enter__(self) -> GroundTruthRenderer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _lab(self, sizes: dict[str, tuple[int, int]]) -> BenchLab:
        key = tuple(sorted(sizes.items()))
        if key not in self._labs:
            self._labs[key] = BenchLab(lab_config_for(self.config, sizes), self.realism)
        return self._labs[key]

    def render(self, sim_episode: str | Path, out_dir: str | Path,
               cameras: list[str] | None = None, max_frames: int | None = None,
               name: str | None = None, rate_hz: float | None = None,
               positions: bool = True, native_size: bool = False) -> GroundTruthResult:
        """Write ``out_dir/<name>`` (default: the sim episode's name); skip it when complete.

        ``rate_hz`` films about that many frames a second (every k-th sim frame; None: all),
        ``max_frames`` at most that many of those; ``positions`` False skips ``positions.json``
        (a segmentation render per frame, half the cost of filming). ``native_size`` films at
        the bench cameras' own sizes instead of the sim frames' (a sim episode generated small
        to save disk still gets full-size ground truth); the sim frames are then resized to
        match, so the pair stays aligned pixel for pixel.
        """
        t_wall = time.perf_counter()
        path = Path(sim_episode).resolve()
        out = Path(out_dir) / (name or path.name)
        if is_complete_paired(out):
            return GroundTruthResult(out, skipped=True,
                                     success=(read_sidecar(out) or {}).get('bench_success'))
        if out.exists():
            raise GroundTruthError(f'{out} exists but is not a complete paired episode; '
                                   f'remove it to render again')
        if not is_episode_dir(path):
            raise NotGeneratedError(f'{path} is not an episode directory (no metadata.yaml)')
        try:
            episode = Episode.open(path)
        except EpisodeError as exc:
            raise NotGeneratedError(f'{path}: {exc}') from None
        with episode:
            return self._render(episode, out, cameras, max_frames, rate_hz, positions,
                                native_size, t_wall)

    def _render(self, ep: Episode, out: Path, cameras: list[str] | None,
                max_frames: int | None, rate_hz: float | None, with_positions: bool,
                native_size: bool, t_wall: float) -> GroundTruthResult:
        path = ep.path
        sidecar = {k: v for k, v in ep.metadata.items() if k != 'bag_custom_data'}
        meta = generated_metadata(path, sidecar)
        typed = ep.meta
        task, layout = typed.task, meta['randomisation']
        if task not in self.config.tasks:
            raise NotGeneratedError(f'{path}: task {task!r} is not a bench-lab task '
                                    f'{sorted(self.config.tasks)}')
        streams = scan_streams(ep, cameras)
        sizes = streams.sizes
        if native_size:   # still only views the lab has, the sim frames scaled copies of them
            lab_config_for(self.config, streams.sizes)
            sizes = {c: (self.config.cameras[c].width, self.config.cameras[c].height)
                     for c in streams.sizes}
        lab = self._lab(sizes)
        if sorted(streams.joint_names) != sorted(lab.joint_names):
            raise MissingStreamError(f'{path}: {JOINT_TOPIC} names joints {streams.joint_names}; '
                                     f'the bench-lab arm has {lab.joint_names}')
        order = [streams.joint_names.index(n) for n in lab.joint_names]
        track = JointTrack(streams.joint_t, streams.joint_q[:, order], lab.timestep)
        grip = GripTrack(track, streams.command_t, streams.command_q[:, order[-1]])
        objects, poses = lab_objects(layout['objects'], self.config.tasks[task].objects, str(path))
        try:
            lab.set_layout(task, objects, poses, layout.get('target') or None, track.q[0],
                           seed=typed.seed or 0)
        except ValueError as exc:
            raise NotGeneratedError(f'{path}: {exc}') from None
        dt = lab.timestep
        n_settle = max(1, round(SETTLE_S / dt))
        lab.step_kinematic(np.repeat(track.q[:1], n_settle, 0),
                           np.zeros((n_settle, track.q.shape[1])),
                           np.full(n_settle, track.q[0, -1]))
        keep = {c: {s[i] for i in kept_frames(s, rate_hz, max_frames)}
                for c, s in streams.image_stamps.items()}
        step = [0]   # physics steps since the first joint stamp

        def advance(t_ns: int) -> None:
            k = int(round((t_ns - track.t0_ns) * 1e-9 / dt))
            if k > step[0]:
                t = np.arange(step[0] + 1, k + 1) * (dt * 1e9)   # each step's end, ns
                q, qd = track.at(t)
                lab.step_kinematic(q, qd, grip.at(t))
                step[0] = k

        writer = PairedEpisodeWriter(out, list(streams.image_stamps), JOINT_TOPIC,
                                     streams.command_topic, streams.command_msgtype)
        items = tracked(lab) if with_positions else []
        positions = {c: {'width': w, 'height': h, 'frames': {}} for c, (w, h) in sizes.items()}
        frames = {c: 0 for c in streams.image_stamps}
        by_topic = {camera_topic(c): c for c in streams.image_stamps}
        try:
            for topic, msgtype, log_ns, raw in ep.raw_messages(
                    [*by_topic, JOINT_TOPIC, streams.command_topic]):
                if topic == JOINT_TOPIC:
                    writer.write_raw(JOINT_TOPIC, raw, log_ns)
                    msg = ep.decode(raw, msgtype, topic)
                    pos = np.asarray(msg.position, float)
                    names = list(msg.name)
                    writer.write_sim_joint_state(lab.joint_names,
                                                 pos[[names.index(n) for n in lab.joint_names]],
                                                 stamp_ns(msg.header) or log_ns, log_ns)
                    continue
                if topic == streams.command_topic:
                    writer.write_raw(topic, raw, log_ns)
                    continue
                cam = by_topic[topic]
                msg = ep.decode(raw, msgtype, topic)
                t = stamp_ns(msg.header) or log_ns
                if t not in keep[cam]:
                    continue
                advance(t)
                real = lab.render(cam)
                writer.write_real_image(cam, rgb8_image_cdr(real, stamp_ns(msg.header),
                                                            msg.header.frame_id), log_ns)
                sim = decode_rgb(msg, f'{path}:{topic}')
                if sim.shape[:2] != real.shape[:2]:
                    sim = cv2.resize(sim, real.shape[1::-1], interpolation=cv2.INTER_LINEAR)
                writer.write_sim_image(cam, sim, t, log_ns, frame_id=msg.header.frame_id)
                if with_positions:
                    positions[cam]['frames'][str(t)] = frame_positions(lab, cam, items, real, sim)
                frames[cam] += 1
            advance(int(streams.joint_t[-1]))
            drift = _drift(lab.task_state()['objects'], meta.get('final_object_states') or {})
            ok, reason = lab.check_success()
            wall = time.perf_counter() - t_wall
            if with_positions:
                (writer.partial / POSITIONS_FILE).write_text(json.dumps(
                    {'format': POSITIONS_FORMAT, 'distortion': bool(self.realism.distortion),
                     'cameras': positions}))
            writer.finish({
                'episode': out.name, 'ground_truth': SOURCE, 'mode': 'kinematic',
                'sim_episode': path.name, 'source_episode': str(path), 'task': task,
                'seed': typed.seed, 'max_frames': max_frames, 'rate_hz': rate_hz,
                'frames': frames,
                'sim_frames': {c: len(s) for c, s in streams.image_stamps.items()},
                'image_size': {c: list(s) for c, s in sizes.items()},
                'sim_image_size': {c: list(s) for c, s in streams.sizes.items()},
                'object_drift_m': drift, 'sim_success': meta.get('success'),
                'bench_success': bool(ok), 'bench_success_reason': reason,
                # what a reader of any episode trusts (counts_as_success): the lab's own check
                'success': bool(ok), 'notes': reason,
                'wall_s': round(wall, 3), 'positions': POSITIONS_FILE if with_positions else None,
                'metadata': {'task': task, 'source': EPISODE_SOURCE, 'seed': typed.seed,
                             'region': typed.region or str(layout.get('region') or ''),
                             'operator': typed.operator, 'sim_source': str(path)}})
        except BaseException:
            writer.abort()
            raise
        return GroundTruthResult(out, False, frames, wall, drift, bool(ok))


def _drift(bench: dict[str, dict], sim: dict[str, dict]) -> dict[str, float]:
    """Distance (m) between each object's bench-lab and sim final position."""
    return {n: round(float(np.linalg.norm(np.asarray(bench[n]['pos'])
                                          - np.asarray(s['pos'], float))), 5)
            for n, s in sim.items() if n in bench and 'pos' in s}


def render_ground_truth(sim_episode: str | Path, out_dir: str | Path,
                        lab_config: LabConfig | str | Path = DEFAULT_LAB,
                        realism: RealismProfile | str | Path = DEFAULT_REALISM,
                        cameras: list[str] | None = None,
                        max_frames: int | None = None, rate_hz: float | None = None,
                        positions: bool = True, native_size: bool = False
                        ) -> GroundTruthResult:
    """One sim episode -> ``out_dir/<name>`` ground-truth paired episode (see module doc)."""
    with GroundTruthRenderer(lab_config, realism) as renderer:
        return renderer.render(sim_episode, out_dir, cameras, max_frames, rate_hz=rate_hz,
                               positions=positions, native_size=native_size)
