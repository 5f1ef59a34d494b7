"""Ground-truth paired episodes as the bench lab writes them, made without the bench lab: the
'real' stream is any function of the sim frames (the tests choose what a perfect, a poor or a
mismatched ground truth looks like), and ``positions.json`` (the bench lab's format) says where
drawn coloured squares are."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
from ns_episodes import DT_NS, JOINTS, camera

from comsim_core.episodes import Episode
from comsim_core.episodes.paired import PairedEpisodeWriter
from comsim_core.episodes.writer import get_distro_typestore
from comsim_twin.generation.writer import GeneratedEpisodeWriter

CMD = '/joint_trajectory_controller/joint_trajectory'
TS = get_distro_typestore('kilted')
IMAGE = 'sensor_msgs/msg/Image'
BACKGROUND = (90, 100, 80)
OBJECTS = {'red_block': (200, 40, 30), 'blue_block': (40, 70, 200)}   # name -> sim colour


def look_real(frame: np.ndarray) -> np.ndarray:
    """A fixed 'realism': warmer, darker, a gradient; far from the sim frame."""
    x = frame.astype(np.float32) * np.array([1.1, 0.8, 0.6]) + 40
    x += np.linspace(0, 30, frame.shape[1])[None, :, None]
    return np.clip(x, 0, 255).astype(np.uint8)


def _image_cdr(rgb: np.ndarray, t: int, frame_id: str) -> bytes:
    T = TS.types
    rgb = np.ascontiguousarray(rgb)
    h, w = rgb.shape[:2]
    header = T['std_msgs/msg/Header'](
        stamp=T['builtin_interfaces/msg/Time'](sec=t // 10**9, nanosec=t % 10**9),
        frame_id=frame_id)
    msg = T[IMAGE](header=header, height=h, width=w, encoding='rgb8', is_bigendian=0,
                   step=w * 3, data=rgb.reshape(-1))
    return bytes(TS.serialize_cdr(msg, IMAGE))


def square(frame: np.ndarray, x: int, y: int, size: int, colour) -> np.ndarray:
    frame[y:y + size, x:x + size] = colour
    return frame


def object_frame(k: int, h: int = 40, w: int = 48) -> np.ndarray:
    """Frame ``k``: a 5 px red square moving right, a 6 px blue one moving left, plain ground."""
    f = np.empty((h, w, 3), np.uint8)
    f[:] = BACKGROUND
    square(f, 8 + 2 * k, 10, 5, OBJECTS['red_block'])
    return square(f, 30 - k, 26, 6, OBJECTS['blue_block'])


def object_sim_episode(out: Path, name: str, frames: int = 5,
                       cameras: tuple[str, ...] = ('front',)) -> Path:
    """A sim episode in the generator's format whose frames are ``object_frame``s."""
    f0 = object_frame(0)
    wr = GeneratedEpisodeWriter(out, name, {c: camera(c, *f0.shape[:2]) for c in cameras},
                                JOINTS, (20.0, 10.0, 10.0))
    for k in range(frames):
        t = 10**9 + k * DT_NS
        wr.joint_state(t, np.zeros(7), np.zeros(7))
        wr.command(t, np.zeros(7), 0.0)
        for c in cameras:
            wr.image(t, c, object_frame(k))
    return wr.finish({'task': 'synthetic', 'source': 'sim', 'seed': 0}, True)


def _positions(sim: np.ndarray, real: np.ndarray) -> dict:
    """A frame's positions.json entry: each OBJECTS square found by its exact sim colour."""
    out = {}
    for name, colour in OBJECTS.items():
        mask = (sim == colour).all(-1)
        ys, xs = np.nonzero(mask)
        if not xs.size:
            out[name] = {'pixels': 0, 'centroid': None, 'color': None}
            continue
        c = [float(xs.mean()), float(ys.mean())]
        out[name] = {'uv': c, 'centroid': c, 'in_image': True, 'pixels': int(xs.size),
                     'box': [xs.min() - 0.5, ys.min() - 0.5, xs.max() + 0.5, ys.max() + 0.5],
                     'color': real[mask].mean(0).tolist(),
                     'color_samples': np.unique(real[mask], axis=0)[:32].tolist(),
                     'sim_color': list(colour), 'sim_color_samples': [list(colour)]}
    return {'objects': out}


def ground_truth_episode(sim: Path, out_dir: Path, cameras: list[str] | None = None,
                         max_frames: int | None = None,
                         real: Callable[[np.ndarray], np.ndarray] = look_real,
                         stamp_shift_ns: int = 0, positions: bool = False) -> Path:
    """``out_dir/<sim name>``: /real = real(sim frame), /sim = the sim frame, same stamps
    (all shifted by ``stamp_shift_ns`` to fake a ground truth of some other episode); with
    ``positions`` also positions.json of the OBJECTS squares (frames from ``object_frame``)."""
    with Episode.open(sim) as ep:
        cams = cameras or sorted(t.split('/')[2] for t in ep.topics
                                 if t.startswith('/cameras/') and t.endswith('/image_raw'))
        frames = {c: list(ep.images(f'/cameras/{c}/image_raw')) for c in cams}
    w = PairedEpisodeWriter(Path(out_dir) / sim.name, cams, '/joint_states', CMD,
                            'trajectory_msgs/msg/JointTrajectory')
    found: dict[str, dict] = {}
    for c, pairs in frames.items():
        if max_frames:
            pairs = [pairs[i] for i in np.linspace(0, len(pairs) - 1, max_frames).astype(int)]
        found[c] = {'width': pairs[0][1].shape[1], 'height': pairs[0][1].shape[0], 'frames': {}}
        for t, f in pairs:
            t += stamp_shift_ns
            r = real(f)
            w.write_real_image(c, _image_cdr(r, t, f'{c}_optical_frame'), t)
            w.write_sim_image(c, f, t, t)
            found[c]['frames'][str(t)] = _positions(f, r)
    if positions:
        (w.partial / 'positions.json').write_text(json.dumps(
            {'format': 'comsim-ground-truth-positions/1', 'cameras': found}, default=float))
    return w.finish({'episode': sim.name, 'ground_truth': 'bench_lab', 'mode': 'kinematic',
                     'sim_episode': sim.name, 'source_episode': str(sim)})
