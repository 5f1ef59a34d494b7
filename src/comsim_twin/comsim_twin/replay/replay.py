"""Replay a recorded (real) episode in the twin, on the real episode's time base.

``EpisodeReplay`` walks the recorded messages in log-time order and keeps the twin in step:

* kinematic: at every physics step the arm is placed at the recorded joint positions (linear
  interpolation between joint-state stamps, precomputed on the step grid: ``JointTrack``),
  moving at that interpolation's velocity (the finite difference of neighbouring samples),
  while the objects follow physics; without the velocity the arm would look motionless to the
  contacts it pushes objects with, and without a huge armature during these steps
  (``MujocoTwin.step_kinematic``) gravity and damping would change that velocity within the
  step (a pushed card then turned 76 deg instead of the lab's 43 deg and ended 4.5 cm off);
* dynamic: the recorded commands drive the arm's actuators through physics, with
  joint_trajectory_controller semantics (``TrajectoryFollower``), each applied when it was
  received (its log time).

At each recorded camera image the twin renders that camera at the image's header stamp; at each
recorded joint state it reads what the twin's arm achieved. ``replay_episode`` writes all of it
as a paired episode (``paired.py``); the ROS node publishes the same events live.
"""
from __future__ import annotations

import platform
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from comsim_core.control.trajectory import TrajectoryFollower, TrajectoryPoint
from comsim_core.episodes import Episode, MissingTopicError
from comsim_core.episodes.decode import header_stamp_ns
from comsim_core.episodes.images import stamp_ns
from comsim_core.episodes.paired import PairedEpisodeWriter, appearance_variant_name
from comsim_core.episodes.reader import FLOAT_ARRAY, IMAGE, TRAJECTORY
from comsim_core.episodes.tracks import JointTrack
from comsim_core.errors import UserError
from comsim_twin.backends.base import Exposure, objects_exposure, scale_lights
from comsim_twin.replay.threads import BackgroundCalls, Turns, run_ahead
from comsim_twin.scene import TwinScene

MODES = ('kinematic', 'dynamic')
COMMAND_TOPICS = ('/joint_trajectory_controller/joint_trajectory',
                  '/forward_position_controller/commands')


class ReplayError(UserError, ValueError):
    """The episode cannot be replayed in this twin (missing topic, joint or camera mismatch)."""


@dataclass
class ReplayEvent:
    """One recorded message and what the twin produced for it.

    kind 'image': ``sim_image`` is the twin's render of ``camera`` at ``stamp_ns`` (and
    ``sim_objects`` its object ids per pixel, when the replay captures them);
    kind 'joints': ``sim_q`` is the twin arm's achieved position at ``stamp_ns``;
    kind 'command': a recorded command, applied to the twin in dynamic mode.
    """
    kind: str
    topic: str
    raw: bytes
    log_ns: int
    stamp_ns: int
    camera: str | None = None
    exposure: Exposure | None = None
    sim_q: np.ndarray | None = None
    objects: Exposure | None = None

    @property
    def sim_image(self) -> np.ndarray | None:
        """The render (lens warp included), computed in the thread that first asks for it."""
        return None if self.exposure is None else self.exposure.image()

    @property
    def sim_objects(self) -> np.ndarray | None:
        """HxW uint8 object ids of the render (1 + index in ``object_names``), if captured."""
        return None if self.objects is None else self.objects.image()


def camera_topics(scene: TwinScene) -> dict[str, str]:
    """Image topic of each scene camera; ``/cameras/<name>/image_raw`` where none is given."""
    return {name: cam.topic or f'/cameras/{name}/image_raw' for name, cam in scene.cameras.items()}


class EpisodeReplay:
    """Drives a built twin through one recorded episode; iterate ``events()`` once."""

    TARGET_BLOCK = 64   # dynamic mode: physics steps of follower targets computed at once

    def __init__(self, episode: Episode, scene: TwinScene, backend: Any,
                 mode: str = 'kinematic', joint_topic: str = '/joint_states',
                 command_topic: str | None = None, use_velocity: bool = True,
                 object_masks: bool = False) -> None:
        """``object_masks``: also snapshot which object each rendered pixel shows."""
        if mode not in MODES:
            raise ReplayError(f'mode {mode!r} unknown; choose one of {MODES}')
        self.episode, self.scene, self.backend, self.mode = episode, scene, backend, mode
        self.joint_topic = joint_topic
        self.use_velocity = use_velocity   # kinematic: place the arm with its recorded velocity
        self.object_masks = object_masks
        if object_masks and hasattr(backend, 'prepare_objects'):
            backend.prepare_objects()   # here: the snapshots are drawn in this thread
        self.cameras = camera_topics(scene)
        self._check_cameras()
        self.command_topic = self._find_command_topic(command_topic)
        self.command_msgtype = (episode.msgtype(self.command_topic)
                                if self.command_topic else None)
        self._require(joint_topic, 'the recorded joint states')
        js = episode.joint_states(joint_topic)
        if js.t_ns.size == 0:
            raise ReplayError(f'{episode.path}: {joint_topic} holds no joint states')
        self.joint_names = list(backend.joint_names)
        self._check_joint_names('joint states on ' + joint_topic, js.names)
        order = [js.names.index(n) for n in self.joint_names]
        self.track = JointTrack(js.t_ns, js.position[:, order], backend.timestep)
        self.t0_ns = self.track.t0_ns
        if self.command_topic and self.command_msgtype == TRAJECTORY:
            first = next(episode.messages(self.command_topic), None)   # one is enough
            names = list(first[1].joint_names) if first else []
            self._check_joint_names('commands on ' + self.command_topic, names)
        self.max_lag_s = 0.0   # worst time by which a render/sample came after its stamp
        self.frames = 0

    # ------------------------------------------------------------------ validation
    def _require(self, topic: str, what: str) -> None:
        try:
            self.episode.require(topic)
        except MissingTopicError as exc:
            raise ReplayError(f'{self.episode.path}: episode lacks topic {topic!r} '
                              f'({what}); it has {exc.available}') from None

    def _check_cameras(self) -> None:
        if not self.cameras:
            raise ReplayError('the twin scene has no cameras to render')
        topics = self.episode.topics
        images = [t for t in topics if self.episode.msgtype(t) == IMAGE]
        for cam, topic in self.cameras.items():
            if topic not in topics:
                raise ReplayError(f'camera {cam!r} of the twin scene has no image topic in '
                                  f'{self.episode.path}: expected {topic!r}; image topics there: '
                                  f'{images}')
            if self.episode.msgtype(topic) != IMAGE:
                raise ReplayError(f'{topic} is a {self.episode.msgtype(topic)}, '
                                  f'expected {IMAGE} for camera {cam!r}')
        missing = [c for c in self.cameras if c not in self.backend.camera_names]
        if missing:
            raise ReplayError(f'backend has no camera {missing}; it has '
                              f'{self.backend.camera_names} (was build(scene) called?)')
        for cam, topic in self.cameras.items():
            self._check_image_size(cam, topic)

    def _check_image_size(self, cam: str, topic: str) -> None:
        """The first recorded image against the scene camera: a twin rendering another size
        (or an encoding the reader cannot decode) would only show up in the gap report."""
        images = self.episode.images(topic)
        try:
            first = next(images, None)
        finally:
            images.close()
        if first is None:
            return
        h, w = first[1].shape[:2]
        want = self.scene.cameras[cam]
        if (h, w) != (want.height, want.width):
            raise ReplayError(f'{self.episode.path}: {topic} holds {w}x{h} images but the twin '
                              f'scene\'s camera {cam!r} is {want.width}x{want.height}; '
                              f'calibrate or align at the recorded size')

    def _find_command_topic(self, topic: str | None) -> str | None:
        if topic:
            self._require(topic, 'the recorded commands')
            return topic
        found = [t for t in COMMAND_TOPICS if t in self.episode.topics]
        if not found and self.mode == 'dynamic':
            raise ReplayError(f'{self.episode.path}: dynamic replay needs a command topic, '
                              f'one of {list(COMMAND_TOPICS)}; episode has {self.episode.topics}')
        return found[0] if found else None

    def _check_joint_names(self, what: str, names: list[str]) -> None:
        if sorted(names) != sorted(self.joint_names):
            raise ReplayError(f'{what} name joints {list(names)} but the robot model has '
                              f'{self.joint_names}')

    # ------------------------------------------------------------------ replay
    def events(self) -> Iterator[ReplayEvent]:
        """Recorded messages in log-time order, each with the twin's output for it.

        Bag reading, physics and scene snapshots (``backend.capture``) run in a helper thread;
        this thread only draws the snapshots (GL stays in the caller's thread), and the lens
        warp runs wherever ``sim_image`` is first read. The helper runs on while a camera
        renders and waits only to snapshot a camera whose previous snapshot is not drawn yet
        (``Turns``).
        """
        turns = Turns()
        recorded = run_ahead(self._recorded(turns), wanted=_has_exposure, on_stop=turns.close)
        try:
            for ev in recorded:
                if ev.exposure is not None:
                    ev.exposure.render()
                    if ev.objects is not None:
                        ev.objects.render()
                    turns.give_back(ev.camera)
                yield ev
        finally:
            recorded.close()   # closes the turns first (on_stop), then joins the helper

    def _recorded(self, turns: Turns) -> Iterator[ReplayEvent]:
        """Events with the twin advanced to each in turn; images snapshot, not yet drawn."""
        b = self.backend
        self._steps = 0
        q0 = self.track.q[0]
        b.set_joint_positions(q0)
        b.command_positions(q0)
        self.follower = TrajectoryFollower(self.joint_names)
        self.follower.set_position(q0, 0.0)
        self._target_block: tuple[int | None, np.ndarray | None] = (None, None)
        cams_by_topic = {topic: cam for cam, topic in self.cameras.items()}
        topics = [*cams_by_topic, self.joint_topic,
                  *([self.command_topic] if self.command_topic else [])]
        for topic, msgtype, log_ns, raw in self.episode.raw_messages(topics):
            raw = bytes(raw)
            if topic in cams_by_topic:   # pixels pass through: read the stamp only
                camera = cams_by_topic[topic]
                stamp = self._stamp(raw, log_ns)
                self._advance_to(stamp)
                self.frames += 1
                turns.take(camera)
                yield ReplayEvent('image', topic, raw, log_ns, stamp, camera,
                                  exposure=b.capture(camera),
                                  objects=(objects_exposure(b, camera) if self.object_masks
                                           else None))
            elif topic == self.joint_topic:
                stamp = self._stamp(raw, log_ns)
                self._advance_to(stamp)
                yield ReplayEvent('joints', topic, raw, log_ns, stamp, sim_q=b.joint_positions())
            else:
                msg = self.episode.decode(raw, msgtype, topic)
                header = getattr(msg, 'header', None)
                stamp = (stamp_ns(header) if header is not None else 0) or log_ns
                self._advance_to(log_ns)   # a command acts when it was received
                if self.mode == 'dynamic':
                    self._apply_command(msg, msgtype, header)
                yield ReplayEvent('command', topic, raw, log_ns, stamp)

    @staticmethod
    def _stamp(raw: bytes, log_ns: int) -> int:
        """Header stamp of a recorded image or joint state; its log time where unstamped."""
        return header_stamp_ns(raw) or log_ns

    def _rel(self, t_ns: int) -> float:
        return (t_ns - self.t0_ns) / 1e9

    def _now_ns(self) -> int:
        """The twin's clock on the episode's time base: steps taken since the first sample."""
        return self.t0_ns + int(round(self._steps * self.backend.timestep * 1e9))

    def _advance_to(self, t_ns: int) -> None:
        """Step physics until the twin's clock is within half a step of ``t_ns``."""
        b = self.backend
        dt_ns = b.timestep * 1e9
        while (now := self._now_ns()) + 0.5 * dt_ns < t_ns:
            n = max(1, int(np.ceil((t_ns - now - 0.5 * dt_ns) / dt_ns)))
            if self.mode == 'kinematic':
                # n steps in one call; each starts at the recorded pose and moves at the recorded
                # velocity, so the integration ends the step on the recording too.
                q, qd = self.track.step_rows(self._steps, n)
                b.step_kinematic(q, qd if self.use_velocity else np.zeros_like(qd))
                self._steps += n
                continue
            targets = self._targets(self._steps, n)
            if targets is None:
                b.step(n)
            else:
                b.step_commanded(targets)
            self._steps += n
        self.max_lag_s = max(self.max_lag_s, (self._now_ns() - t_ns) / 1e9)

    def _targets(self, first: int, n: int) -> np.ndarray | None:
        """The follower's target at the start of steps first .. first + n - 1 (None: no command
        yet). Computed for ``TARGET_BLOCK`` steps at once and kept until the next command:
        several events fall between two commands."""
        start, block = self._target_block
        if start is None or block is None or not start <= first <= start + len(block) - n:
            steps = np.arange(first, first + max(n, self.TARGET_BLOCK))
            start, block = first, self.follower.targets(steps * self.backend.timestep)
            self._target_block = (start, block)
        return None if block is None else block[first - start:first - start + n]

    def _apply_command(self, msg: Any, msgtype: str, header: Any) -> None:
        self._target_block = (None, None)   # the follower changes: targets computed anew
        now = self._rel(self._now_ns())
        if msgtype == FLOAT_ARRAY:
            self.follower.set_position(np.asarray(msg.data, float), now)
            return
        points = [TrajectoryPoint(p.time_from_start.sec + p.time_from_start.nanosec * 1e-9,
                                  np.asarray(p.positions, float),
                                  np.asarray(p.velocities, float) if len(p.velocities) else None)
                  for p in msg.points]
        start = stamp_ns(header)
        start_rel = 0.0 if start == 0 else max(self._rel(start), 1e-9)
        self.follower.set_trajectory(list(msg.joint_names), points, start_rel, now,
                                     self.backend.joint_positions())


def _has_exposure(ev: ReplayEvent) -> bool:
    return ev.exposure is not None


def _write_frame(writer: PairedEpisodeWriter, ev: ReplayEvent) -> None:
    writer.write_frame(ev.camera, ev.raw, ev.sim_image, ev.stamp_ns, ev.log_ns, ev.sim_objects)


def paired_path(out_dir: str | Path, episode_path: str | Path, mode: str,
                variant: int = 0) -> Path:
    """Where ``replay_episode`` puts the paired episode of ``episode_path`` (``variant`` k > 0:
    its k-th replay in a scene whose look was redrawn)."""
    name = f'{Path(episode_path).resolve().name}_{mode}'
    return Path(out_dir) / (appearance_variant_name(name, variant) if variant else name)


def replay_episode(episode_path: str | Path, scene: TwinScene, backend: Any,
                   mode: str = 'kinematic', out_dir: str | Path = 'output/paired',
                   joint_topic: str = '/joint_states', command_topic: str | None = None,
                   scene_file: str | Path | None = None, variant: int = 0,
                   light_scale: float = 1.0, appearance: dict | None = None,
                   object_masks: bool = False) -> Path:
    """Replay one recorded episode in the twin; returns the paired episode directory.

    Builds ``scene`` in ``backend`` (any ``TwinBackend``), its lights scaled by
    ``light_scale``, starts from the recorded initial joint state and writes
    ``paired_path(out_dir, episode_path, mode, variant)``; ``appearance`` (the look drawn for
    a variant) goes into its sidecar. ``object_masks``: each render's object ids beside it
    (``comsim_core.episodes.paired.sim_objects_topic``).
    """
    episode_path = Path(episode_path).resolve()
    out = paired_path(out_dir, episode_path, mode, variant)
    wall0 = time.perf_counter()
    with Episode.open(episode_path) as episode:
        backend.build(scene)
        scale_lights(backend, light_scale)
        replay = EpisodeReplay(episode, scene, backend, mode, joint_topic, command_topic,
                               object_masks=object_masks)
        writer = PairedEpisodeWriter(out, list(replay.cameras), joint_topic,
                                     replay.command_topic, replay.command_msgtype,
                                     list(backend.object_names) if object_masks else None)
        background = BackgroundCalls()
        try:
            for ev in replay.events():
                if ev.kind == 'image':   # sim_image read (lens warp) in the writer's thread
                    background(_write_frame, writer, ev)
                elif ev.kind == 'joints':
                    background(writer.write_joints, ev.topic, ev.raw, replay.joint_names,
                               ev.sim_q, ev.stamp_ns, ev.log_ns)
                else:
                    background(writer.write_raw, ev.topic, ev.raw, ev.log_ns)
            background.close()
        except BaseException:
            background.stop()
            writer.abort()
            raise
        wall = time.perf_counter() - wall0
        source_meta = episode.metadata.get('metadata') or {}
        return writer.finish({
            'source_episode': str(episode_path),
            'source_metadata': source_meta,
            'task': episode.meta.task or scene.task,
            'mode': mode,
            'backend': type(backend).__name__,
            'twin_scene_file': str(Path(scene_file).resolve()) if scene_file else None,
            'twin_scene': scene.to_dict(),
            'appearance_variant': ({'index': variant, **(appearance or {})} if variant
                                   else None),
            'replay': {'frames': replay.frames, 'wall_s': round(wall, 3),
                       'frames_per_s': round(replay.frames / wall, 2) if wall > 0 else None,
                       'max_lag_s': round(replay.max_lag_s, 6),
                       'timestep': backend.timestep},
            'provenance': {'created_at': datetime.now(timezone.utc).isoformat(timespec='seconds'),
                           'host': platform.node(), 'python': platform.python_version(),
                           'tool': 'comsim_twin.replay'},
        })
