"""Paired episodes: a real episode and its twin replay in one rosbag2, on one time base.

Layout (a normal episode directory, readable by ``comsim_core.episodes.Episode``):

* ``/real/cameras/<cam>/image_raw``: the recorded images, bytes copied as recorded;
* ``/sim/cameras/<cam>/image_raw``: twin renders with the SAME header stamps (and log times);
* ``/joint_states`` and the command topic exactly as recorded;
* ``/sim/joint_states``: what the twin's arm achieved, stamped like the recorded joint states;
* optionally ``/sim/cameras/<cam>/objects``: mono8, which twin object each pixel of the render
  shows (1 + its index in the sidecar's ``objects``, 0 none), same stamps: where the objects
  are, for a neural simulator that weighs them in its loss;
* ``episode.yaml``: source episode, mode, twin scene, provenance and ``status: complete``.

The bag is written into a hidden ``.partial`` directory and renamed when complete, so a
directory under its final name is always a finished paired episode (what makes batches resumable).
"""
from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from comsim_core.episodes.encode import joint_state_cdr, mono8_image_cdr, rgb8_image_cdr
from comsim_core.episodes.layout import COMPLETE, is_complete
from comsim_core.episodes.reader import IMAGE, JOINT_STATE
from comsim_core.episodes.sidecar import read_sidecar, write_sidecar
from comsim_core.episodes.topics import TopicSpec
from comsim_core.episodes.writer import EpisodeBagWriter

FORMAT = 'comsim-paired-episode/1'
SIM_JOINT_STATES = '/sim/joint_states'
APPEARANCE_SUFFIX = '_app'
_VARIANT = re.compile(rf'(.+){APPEARANCE_SUFFIX}[1-9][0-9]*')


def real_image_topic(camera: str) -> str:
    return f'/real/cameras/{camera}/image_raw'


def sim_image_topic(camera: str) -> str:
    return f'/sim/cameras/{camera}/image_raw'


def sim_objects_topic(camera: str) -> str:
    return f'/sim/cameras/{camera}/objects'


def appearance_variant_name(pair_name: str, k: int) -> str:
    """The name of the ``k``-th (1-based) replay of a pair's real episode in a twin scene whose
    look was redrawn (``comsim_twin.generation.randomise.appearance_variant``)."""
    if k < 1:
        raise ValueError(f'appearance variants count from 1, got {k}')
    return f'{pair_name}{APPEARANCE_SUFFIX}{k}'


def variant_source(name: str) -> str:
    """The pair an appearance variant replays (a plain pair's own name): a held-out pair's
    variants are held out with it."""
    match = _VARIANT.fullmatch(name)
    return match.group(1) if match else name


def is_complete_paired(path: Path) -> bool:
    """Whether ``path`` holds a finished paired episode (not just any finished episode)."""
    return is_complete(path, FORMAT)


def paired_cameras(path: Path) -> list[str]:
    """Camera names of a paired episode, from its sidecar."""
    side = read_sidecar(Path(path))
    if not side or side.get('format') != FORMAT:
        raise ValueError(f'{path} is not a paired episode (no {FORMAT} episode.yaml)')
    return list(side.get('cameras') or [])


class PairedEpisodeWriter:
    """Writes one paired episode; ``finish(sidecar)`` publishes it under its final name."""

    def __init__(self, path: Path, cameras: list[str], joint_topic: str,
                 command_topic: str | None, command_msgtype: str | None,
                 objects: list[str] | None = None) -> None:
        """``objects``: the twin's object names, when the replay writes object masks."""
        self.path = Path(path)
        self.objects = objects
        self.partial = self.path.with_name(f'.{self.path.name}.partial')
        self.cameras = list(cameras)
        self.joint_topic = joint_topic
        self.command_topic = command_topic
        topics = [TopicSpec(joint_topic, JOINT_STATE), TopicSpec(SIM_JOINT_STATES, JOINT_STATE)]
        if command_topic:
            topics.append(TopicSpec(command_topic, str(command_msgtype)))
        for cam in self.cameras:
            topics += [TopicSpec(real_image_topic(cam), IMAGE), TopicSpec(sim_image_topic(cam),
                                                                          IMAGE)]
            if objects is not None:
                topics.append(TopicSpec(sim_objects_topic(cam), IMAGE))
        if self.path.exists():
            raise FileExistsError(f'{self.path} exists; remove it to replay again')
        shutil.rmtree(self.partial, ignore_errors=True)  # left over by an interrupted run
        self.partial.parent.mkdir(parents=True, exist_ok=True)
        self._writer = EpisodeBagWriter(self.partial, topics)
        self._writer.open()
        self.counts: dict[str, int] = {t.name: 0 for t in topics}

    # ---------------------------------------------------------------- recorded (raw) streams
    def write_raw(self, topic: str, raw: bytes | memoryview, log_ns: int) -> None:
        """A recorded message, unchanged: joint states, commands (topic as recorded)."""
        self._write(topic, raw, log_ns)

    def write_real_image(self, camera: str, raw: bytes | memoryview, log_ns: int) -> None:
        self._write(real_image_topic(camera), raw, log_ns)

    # ---------------------------------------------------------------- twin streams
    def write_sim_image(self, camera: str, rgb: np.ndarray, stamp_ns: int, log_ns: int,
                        frame_id: str = '') -> None:
        raw = rgb8_image_cdr(rgb, stamp_ns, frame_id or f'{camera}_optical_frame')
        self._write(sim_image_topic(camera), raw, log_ns)

    def write_sim_joint_state(self, names: list[str], position: np.ndarray, stamp_ns: int,
                              log_ns: int) -> None:
        self._write(SIM_JOINT_STATES, joint_state_cdr(names, position, stamp_ns), log_ns)

    # ---------------------------------------------------------------- one call per replay event
    def write_sim_objects(self, camera: str, labels: np.ndarray, stamp_ns: int, log_ns: int,
                          frame_id: str = '') -> None:
        raw = mono8_image_cdr(labels, stamp_ns, frame_id or f'{camera}_optical_frame')
        self._write(sim_objects_topic(camera), raw, log_ns)

    def write_frame(self, camera: str, real_raw: bytes, sim_rgb: np.ndarray, stamp_ns: int,
                    log_ns: int, sim_objects: np.ndarray | None = None) -> None:
        """A recorded image and the twin's render of the same moment (and its object mask)."""
        self.write_real_image(camera, real_raw, log_ns)
        self.write_sim_image(camera, sim_rgb, stamp_ns, log_ns)
        if sim_objects is not None:
            self.write_sim_objects(camera, sim_objects, stamp_ns, log_ns)

    def write_joints(self, topic: str, raw: bytes, names: list[str], sim_q: np.ndarray,
                     stamp_ns: int, log_ns: int) -> None:
        """A recorded joint state and what the twin's arm achieved at its stamp."""
        self.write_raw(topic, raw, log_ns)
        self.write_sim_joint_state(names, sim_q, stamp_ns, log_ns)

    # ---------------------------------------------------------------- end
    def finish(self, sidecar: dict[str, Any]) -> Path:
        """Close the bag, write ``episode.yaml`` (status complete) and move it into place."""
        self._writer.close()
        data = {'format': FORMAT, 'status': COMPLETE, 'cameras': self.cameras,
                **({'objects': self.objects} if self.objects is not None else {}),
                'joint_topic': self.joint_topic, 'command_topic': self.command_topic,
                'counts': dict(self.counts), **sidecar}
        write_sidecar(self.partial, data)
        # rosbag2 names the storage file after the directory: keep the final name inside.
        inner = self._writer.storage_file
        final_inner = inner.with_name(f'{self.path.name}{inner.suffix}')
        inner.rename(final_inner)
        meta = self.partial / 'metadata.yaml'
        meta.write_text(meta.read_text().replace(inner.name, final_inner.name))
        self.partial.rename(self.path)
        return self.path

    def abort(self) -> None:
        """Drop everything written (an error stopped the replay)."""
        self._writer.abort()
        shutil.rmtree(self.partial, ignore_errors=True)

    def _write(self, topic: str, raw: bytes | memoryview, log_ns: int) -> None:
        self._writer.write(topic, raw, int(log_ns))
        self.counts[topic] += 1
