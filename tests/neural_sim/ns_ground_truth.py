"""Ground-truth paired episodes as the bench lab writes them, made without the bench lab: the
'real' stream is any function of the sim frames (the tests choose what a perfect, a poor or a
mismatched ground truth looks like)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from comsim_teleop.episodes import Episode
from comsim_teleop.recording.bag_writer import get_distro_typestore
from comsim_twin.replay.paired import PairedEpisodeWriter

CMD = '/joint_trajectory_controller/joint_trajectory'
TS = get_distro_typestore('kilted')
IMAGE = 'sensor_msgs/msg/Image'


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


def ground_truth_episode(sim: Path, out_dir: Path, cameras: list[str] | None = None,
                         max_frames: int | None = None,
                         real: Callable[[np.ndarray], np.ndarray] = look_real,
                         stamp_shift_ns: int = 0) -> Path:
    """``out_dir/<sim name>``: /real = real(sim frame), /sim = the sim frame, same stamps
    (all shifted by ``stamp_shift_ns`` to fake a ground truth of some other episode)."""
    with Episode.open(sim) as ep:
        cams = cameras or sorted(t.split('/')[2] for t in ep.topics
                                 if t.startswith('/cameras/') and t.endswith('/image_raw'))
        frames = {c: list(ep.images(f'/cameras/{c}/image_raw')) for c in cams}
    w = PairedEpisodeWriter(Path(out_dir) / sim.name, cams, '/joint_states', CMD,
                            'trajectory_msgs/msg/JointTrajectory')
    for c, pairs in frames.items():
        if max_frames:
            pairs = [pairs[i] for i in np.linspace(0, len(pairs) - 1, max_frames).astype(int)]
        for t, f in pairs:
            t += stamp_shift_ns
            w.write_real_image(c, _image_cdr(real(f), t, f'{c}_optical_frame'), t)
            w.write_sim_image(c, f, t, t)
    return w.finish({'episode': sim.name, 'ground_truth': 'bench_lab', 'mode': 'kinematic',
                     'sim_episode': sim.name, 'source_episode': str(sim)})
