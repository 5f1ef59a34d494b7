"""Ground truth for generated episodes: what the real lab would have filmed.

A sim episode written by the twin's generator (``comsim_twin.generation``: rosbag2 plus an
``episode.yaml`` whose ``metadata.randomisation`` holds the layout) has no real counterpart. The
bench lab can make one: it is set up with the episode's layout (task objects and distractors at
their initial poses, with the episode's shapes, sizes and colours; the move_card zone where the
episode's target puts it) and replays the episode's joint trajectory, rendering every camera
WITH the hidden realism profile at the sim frames' header stamps. The output is a paired episode
(``comsim_core.episodes.paired``): ``/real/...`` = bench-lab render (ground truth), ``/sim/...`` =
the sim episode's own frames, joint states and commands copied; so the neural simulator's
evaluation (``load_paired_dir``, ``run_ablation``, ``evaluation.generated``) reads it unchanged.

Replay is **kinematic**: at every physics step the arm is placed at the recorded joint
positions, linearly interpolated between joint-state stamps, moving at that segment's velocity;
the objects follow the bench lab's physics (its own friction and damping). The gripper alone is
driven by its actuator towards the recorded commands, because a finger placed where the sim's
finger stopped touches the object without squeezing it, and the grasped object slips out. Why not
dynamic replay of the commands: the bench lab's controller lag, damping and latency would put the
arm a few pixels away from the sim frames, and the metric would then score the sim/real
*dynamics* gap instead of the appearance gap that the neural simulator is asked to close. The
objects cannot be placed kinematically (a generated episode does not record their trajectories),
so they are simulated; ``object_drift_m`` in the sidecar says how far each ended from the sim's
final pose, i.e. how far the ground truth's object motion departs from the sim's.

Deliberately NOT copied from the episode: the twin's appearance randomisation (table texture and
colour, background, light scale) and its camera jitter. Ground truth is the real lab's own table,
lights and (true) cameras; that is what a translation should look like.

Where things truly are goes next to the bag, in ``positions.json`` (written before the episode is
marked complete; ``frame_positions``): per camera and frame stamp, each object's and the
gripper's projected centre through the camera the render used (lens distortion included), the
visible pixels from a segmentation render (occlusion by the arm included), their centroid, the
mean colour of the ground-truth frame over them and a few of their colours (the twin frame's
too). The neural simulator's evaluation reads it to find the objects in translated frames
without touching the bench lab.

    comsim-bench-lab-ground-truth SIM_EPISODE_OR_DIR ... --out DIR [--max-frames N]
"""
from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from comsim_bench_lab.config import CameraConfig, LabConfig, ObjectConfig
from comsim_bench_lab.lab import BenchLab
from comsim_bench_lab.realism import RealismProfile
from comsim_bench_lab.scene import ROBOT_PREFIX
from comsim_core.camera import project_points
from comsim_core.episodes import Episode, EpisodeMeta, find_episodes, is_episode_dir
from comsim_core.episodes.encode import rgb8_image_cdr
from comsim_core.episodes.errors import EpisodeError
from comsim_core.episodes.images import image_to_rgb, stamp_ns
from comsim_core.episodes.paired import PairedEpisodeWriter, is_complete_paired
from comsim_core.episodes.reader import IMAGE, JOINT_STATE
from comsim_core.episodes.tracks import JointTrack
from comsim_core.errors import UserError, cli_main
from comsim_core.paths import resolve_config_path

JOINT_TOPIC = '/joint_states'
COMMAND_TOPICS = ('/joint_trajectory_controller/joint_trajectory',
                  '/forward_position_controller/commands')
CAMERA_PREFIX = '/cameras/'
SOURCE = 'bench_lab'          # sidecar ``ground_truth``: how a reader recognises these episodes
SETTLE_S = 0.1                # objects come to rest before the first stamp (as the generator)
NECK_FRACTION = (0.4, 0.3)    # bottle neck radius, half height vs the body's (the twin's rule)
DISTRACTOR_MASS, DISTRACTOR_FRICTION = 0.05, 1.0
DEFAULT_LAB = 'config/bench_lab/lab.yaml'
DEFAULT_REALISM = 'config/bench_lab/realism.yaml'
POSITIONS_FILE = 'positions.json'
POSITIONS_FORMAT = 'comsim-ground-truth-positions/1'
GRIPPER = 'gripper'                             # its entry in positions.json, beside the objects
GRIPPER_BODIES = ('finger_left', 'finger_right')  # what is seen of it: the finger pads
TCP_SITE = 'tcp'                                # the robot model's centre between the pads
MIN_COLOR_PIXELS = 4       # interior pixels below which the mask's edge pixels count too
COLOR_SAMPLES = 32         # pixel colours recorded per object and frame (its colour model)


class GroundTruthError(ValueError):
    """The episode cannot be given a ground truth (bad input); the message says why."""


class NotGeneratedError(GroundTruthError):
    """Not a complete episode written by the twin's generator."""


class MissingStreamError(GroundTruthError):
    """A topic the replay needs is absent."""


class CameraMismatchError(GroundTruthError):
    """A sim camera the bench lab does not have, or cannot render at the sim frames' size."""


@dataclass
class GroundTruthResult:
    path: Path
    skipped: bool = False
    frames: dict[str, int] = field(default_factory=dict)      # camera -> frames rendered
    wall_s: float = 0.0
    object_drift_m: dict[str, float] = field(default_factory=dict)


def camera_topic(camera: str) -> str:
    return f'{CAMERA_PREFIX}{camera}/image_raw'


# ---------------------------------------------------------------------------- the sim episode
def generated_metadata(path: Path, sidecar: dict[str, Any]) -> dict[str, Any]:
    """The generator's metadata of a sim episode; NotGeneratedError says what is wrong."""
    meta = sidecar.get('metadata') or {}
    typed = EpisodeMeta.from_sidecar(sidecar, str(path))
    if typed.source == 'pseudo_real':
        src = (meta.get('provenance') or {}).get('source_episode', '?')
        raise NotGeneratedError(f'{path} is a translated (pseudo-real) episode; render the ground '
                                f'truth of its sim source instead: {src}')
    layout = meta.get('randomisation') or {}
    if typed.source != 'sim' or not isinstance(layout.get('objects'), dict):
        raise NotGeneratedError(
            f'{path} is not an episode generated by the twin: its episode.yaml needs '
            f'metadata.source: sim and metadata.randomisation.objects (comsim-twin-generate '
            f'writes both); got source={meta.get("source")!r}, randomisation keys '
            f'{sorted(layout)}')
    if sidecar.get('status') != 'complete':
        raise NotGeneratedError(f'{path}: episode status is {sidecar.get("status")!r}, '
                                f'not complete')
    if not typed.task:
        raise NotGeneratedError(f'{path}: episode metadata names no task')
    return meta


def lab_objects(layout: dict[str, Any], task_objects: dict[str, ObjectConfig],
                where: str) -> tuple[dict[str, ObjectConfig], dict[str, tuple[Any, Any]]]:
    """Bench-lab objects and initial poses from a generated layout.

    Shape, size and colour come from the episode; mass and friction from the bench lab's object
    of the same name (the real object), defaults for distractors. A twin 'bottle' is a cylinder
    with a neck: size[2:4] when given, else the bench bottle's neck scaled to the body, else the
    twin's default ratios.
    """
    objects, poses = {}, {}
    for name, o in layout.items():
        try:
            shape, size = str(o['shape']), [float(v) for v in o['size']]
            color = [float(v) for v in o['color']][:3]
            pos, quat = [float(v) for v in o['pos']], [float(v) for v in o['quat']]
        except (KeyError, TypeError, ValueError) as exc:
            raise NotGeneratedError(f'{where}: randomisation.objects.{name} needs shape, size, '
                                    f'color, pos and quat ({exc!r})') from None
        if len(pos) != 3 or len(quat) != 4 or len(color) != 3:
            raise NotGeneratedError(f'{where}: randomisation.objects.{name}: pos needs 3 values, '
                                    f'quat 4, color 3')
        real = task_objects.get(name)
        neck = None
        if shape == 'box' and len(size) >= 3:
            size = size[:3]
        elif shape == 'cylinder' and len(size) >= 2:
            size = size[:2]
        elif shape == 'bottle' and len(size) >= 2:
            shape = 'cylinder'
            if len(size) >= 4:
                neck = size[2:4]
            elif real is not None and real.neck is not None:
                neck = [real.neck[0] * size[0] / real.size[0],
                        real.neck[1] * size[1] / real.size[-1]]
            else:
                neck = [NECK_FRACTION[0] * size[0], NECK_FRACTION[1] * size[1]]
            size = size[:2]
        else:
            raise NotGeneratedError(f'{where}: randomisation.objects.{name}: shape {shape!r} with '
                                    f'size {size} is not a box (3), cylinder (2) or bottle (2/4)')
        mass = real.mass if real is not None else DISTRACTOR_MASS
        friction = real.friction if real is not None else DISTRACTOR_FRICTION
        objects[name] = ObjectConfig(name, shape, np.array(size), np.array(color), mass,
                                     friction, None if neck is None else np.array(neck, float))
        poses[name] = (pos, quat)
    return objects, poses


def lab_config_for(config: LabConfig, sizes: dict[str, tuple[int, int]]) -> LabConfig:
    """``config`` with only the given cameras, each at the given (width, height).

    A camera whose size differs is rescaled (intrinsics scaled as the twin's ``image_scale``
    does) when the size is a uniformly scaled copy of the bench camera's; otherwise
    CameraMismatchError.
    """
    missing = [c for c in sizes if c not in config.cameras]
    if missing:
        raise CameraMismatchError(f'sim cameras {missing} are not bench-lab cameras '
                                  f'{sorted(config.cameras)}')
    out = copy.copy(config)
    out.cameras = {}
    for name, (w, h) in sizes.items():
        cam: CameraConfig = copy.deepcopy(config.cameras[name])
        if (w, h) != (cam.width, cam.height):
            sx, sy = w / cam.width, h / cam.height
            if abs(sx - sy) > 0.5 / cam.width + 0.5 / cam.height + 1e-9:
                raise CameraMismatchError(
                    f'camera {name!r}: sim frames are {w}x{h}, the bench-lab camera is '
                    f'{cam.width}x{cam.height}; not a scaled copy (aspect ratio differs), '
                    f'so the bench lab cannot render the same view at that size')
            cam.fx, cam.fy = cam.fx * sx, cam.fy * sy
            cam.cx, cam.cy = (cam.cx + 0.5) * sx - 0.5, (cam.cy + 0.5) * sy - 0.5
            cam.width, cam.height = int(w), int(h)
        out.cameras[name] = cam
    return out


@dataclass
class _Streams:
    """What the first pass over a sim episode finds."""

    joint_names: list[str]
    joint_t: np.ndarray                                # (N,) header stamps, ns
    joint_q: np.ndarray                                # (N, J)
    image_stamps: dict[str, list[int]]                 # camera -> stamps (log order)
    sizes: dict[str, tuple[int, int]]                  # camera -> (width, height)
    command_topic: str
    command_msgtype: str
    command_t: np.ndarray                              # (M,) when each command takes effect
    command_q: np.ndarray                              # (M, J) in joint_names order


def _scan(ep: Episode, cameras: list[str] | None) -> _Streams:
    path = ep.path
    topics = {t: ep.msgtype(t) for t in ep.topics}
    images = {t[len(CAMERA_PREFIX):-len('/image_raw')]: t for t, m in topics.items()
              if t.startswith(CAMERA_PREFIX) and t.endswith('/image_raw') and m == IMAGE}
    commands = [t for t in COMMAND_TOPICS if t in topics]
    missing = ([] if topics.get(JOINT_TOPIC) == JOINT_STATE else [f'{JOINT_TOPIC} (JointState)'])
    missing += [] if images else [f'{CAMERA_PREFIX}<camera>/image_raw (Image)']
    missing += [] if commands else [f'a command topic, one of {list(COMMAND_TOPICS)}']
    if missing:
        raise MissingStreamError(f'sim episode {path} lacks {missing}; it has {sorted(topics)}')
    if cameras:
        absent = [c for c in cameras if c not in images]
        if absent:
            raise CameraMismatchError(f'sim episode {path} has no camera {absent}; it has '
                                      f'{sorted(images)}')
        images = {c: images[c] for c in cameras}
    stamps: dict[str, list[int]] = {c: [] for c in images}
    sizes: dict[str, tuple[int, int]] = {}
    for cam, topic in images.items():
        for log_ns, msg in ep.messages(topic):
            stamps[cam].append(stamp_ns(msg.header) or log_ns)
            sizes.setdefault(cam, (int(msg.width), int(msg.height)))
    joints = ep.joint_states(JOINT_TOPIC)
    empty = [c for c, s in stamps.items() if not s]
    empty += [] if joints.t_ns.size else [JOINT_TOPIC]
    if empty:
        raise MissingStreamError(f'sim episode {path}: no messages on {empty}')
    names = joints.names
    cmds = ep.commands(commands[0])
    cmd_names = cmds.names or names
    if not cmds.t_ns.size:
        command_q = np.zeros((0, len(names)))
    elif sorted(cmd_names) != sorted(names) or cmds.position.shape[1] != len(names):
        raise MissingStreamError(f'{path}: commands on {commands[0]} name joints '
                                 f'{cmd_names}; the joint states name {names}')
    else:
        command_q = cmds.position[:, [cmd_names.index(n) for n in names]]
    return _Streams(names, joints.t_ns, joints.position, stamps, sizes, commands[0],
                    topics[commands[0]], cmds.t_ns, command_q)


def select_frames(n: int, max_frames: int | None) -> np.ndarray:
    """Indices of at most ``max_frames`` frames spread evenly over ``n`` (first and last kept)."""
    if not max_frames or max_frames >= n:
        return np.arange(n)
    return np.unique(np.linspace(0, n - 1, max(1, int(max_frames))).round().astype(int))


class _GripTrack:
    """The gripper target in force at each time (last command; the measured opening before
    the first): the gripper is driven, not placed, so a grasp holds (``step_kinematic``)."""

    def __init__(self, track: JointTrack, t_ns: np.ndarray, target: np.ndarray) -> None:
        self.track = track
        self.t = (np.asarray(t_ns, np.int64) - track.t0_ns).astype(np.float64)
        self.target = np.asarray(target, float)

    def at(self, t: np.ndarray) -> np.ndarray:
        """Targets at ``t`` (ns since the first joint sample)."""
        out = self.track.at(t)[0][:, -1]
        idx = np.searchsorted(self.t, t + 1.0, side='right') - 1
        ok = idx >= 0
        out[ok] = self.target[idx[ok]]
        return out


# ---------------------------------------------------------------------------- true positions
@dataclass
class Tracked:
    """Something whose image position is recorded: its geoms, and the body or site whose origin
    is its centre (an object's body; the gripper's TCP site)."""

    name: str
    geoms: np.ndarray
    body: int | None = None
    site: int | None = None


def tracked(lab: BenchLab) -> list[Tracked]:
    """The lab's objects, then the gripper (its finger pads, centred on the TCP) when the arm
    has those (another arm's MJCF may not: its gripper is then not recorded)."""
    model = lab.model
    items = [Tracked(n, np.flatnonzero(model.geom_bodyid == model.body(n).id),
                     body=model.body(n).id) for n in lab.objects]
    try:
        fingers = [model.body(ROBOT_PREFIX + n).id for n in GRIPPER_BODIES]
        tcp = model.site(ROBOT_PREFIX + TCP_SITE).id
    except KeyError:
        return items
    items.append(Tracked(GRIPPER, np.flatnonzero(np.isin(model.geom_bodyid, fingers)), site=tcp))
    return items


def _labels(lab: BenchLab, camera: str, items: list[Tracked]) -> np.ndarray:
    """(H, W) uint16: 1 + index into ``items`` of the geom seen at each pixel (0: other), through
    the same lens path as ``BenchLab.render`` (distorted when the realism profile distorts)."""
    lut = np.zeros(lab.model.ngeom + 1, np.uint16)      # id -1 (nothing) reads the last entry
    for i, item in enumerate(items):
        lut[item.geoms] = i + 1
    return lut[lab.render_geom_ids(camera)]


def _corners(lab: BenchLab, geoms: np.ndarray) -> np.ndarray:
    """(8 n, 3) world corners of the geoms' bounding boxes (their projection: the image box)."""
    signs = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float)
    m, d = lab.model, lab.data
    return np.concatenate([d.geom_xpos[g] + (m.geom_aabb[g, :3] + signs * m.geom_aabb[g, 3:])
                           @ d.geom_xmat[g].reshape(3, 3).T for g in geoms])


def colour_model(image: np.ndarray, mask: np.ndarray, median: bool = False
                 ) -> tuple[list[float] | None, list[list[int]] | None]:
    """Colour of ``image`` over ``mask`` (mean, or ``median`` for frames that may sit a pixel or
    two off the mask: the twin's) and up to ``COLOR_SAMPLES`` of its pixels' colours.

    The samples let a tracker accept the object's shaded faces without accepting another hue as
    dark or as bright (one mean colour cannot). Only the mask's interior counts when it has a
    few pixels (blur mixes the edge pixels with the background); samples leave out the tenth
    farthest from the centre (highlights, background where the frame is off) and are spread
    evenly over the rest by brightness.
    """
    inner = cv2.erode(mask.astype(np.uint8), np.ones((3, 3), np.uint8)).astype(bool)
    px = image[inner if inner.sum() >= MIN_COLOR_PIXELS else mask].astype(float)
    if not len(px):
        return None, None
    centre = np.median(px, 0) if median else px.mean(0)
    d = np.linalg.norm(px - centre, axis=1)
    core = px[d <= np.percentile(d, 90)]
    core = core[np.argsort(core.sum(1), kind='stable')]
    pick = np.unique(np.linspace(0, len(core) - 1, min(COLOR_SAMPLES, len(core))).round())
    return ([round(float(c), 1) for c in centre],
            core[pick.astype(int)].round().astype(int).tolist())


def frame_positions(lab: BenchLab, camera: str, items: list[Tracked], truth: np.ndarray,
                    sim: np.ndarray | None = None) -> dict[str, Any]:
    """Where each item truly is in ``camera``'s frame now (``truth``: that frame).

    Per item: ``uv`` its centre projected through the calibrated camera (distortion as
    rendered), ``box`` the projection's extent, ``in_image``; ``pixels`` how many pixels show it
    (segmentation: occlusion counts), their ``centroid``, ``color``/``color_samples`` of the
    truth frame over them and ``sim_color``/``sim_color_samples`` of the twin's (``colour_model``).
    """
    cal = lab.camera_info(camera)
    dist = cal.D if lab.realism is not None and lab.realism.distortion else None
    labels = _labels(lab, camera, items)
    h, w = labels.shape
    out: dict[str, Any] = {'objects': {}}
    for i, item in enumerate(items):
        centre = (lab.data.xpos[item.body] if item.body is not None
                  else lab.data.site_xpos[item.site])
        uv = project_points(np.vstack([centre, _corners(lab, item.geoms)]), cal.K, dist,
                            cal.T_base_camera)
        mask = labels == i + 1
        ys, xs = np.nonzero(mask)
        colour, samples = colour_model(truth, mask)
        sim_colour, sim_samples = (None, None) if sim is None else colour_model(sim, mask, True)
        entry = {'uv': _round(uv[0]), 'box': _round([*uv[1:].min(0), *uv[1:].max(0)]),
                 'in_image': bool(-0.5 <= uv[0, 0] < w - 0.5 and -0.5 <= uv[0, 1] < h - 0.5),
                 'pixels': int(xs.size),
                 'centroid': _round([xs.mean(), ys.mean()]) if xs.size else None,
                 'color': colour, 'color_samples': samples, 'sim_color': sim_colour,
                 'sim_color_samples': sim_samples}
        if item.name == GRIPPER and item.site is not None:
            out[GRIPPER] = entry
        else:
            out['objects'][item.name] = entry
    return out


def _round(values: Any) -> list[float]:
    return [round(float(v), 2) for v in values]


# ---------------------------------------------------------------------------- rendering
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
               name: str | None = None) -> GroundTruthResult:
        """Write ``out_dir/<name>`` (default: the sim episode's name); skip it when complete."""
        t_wall = time.perf_counter()
        path = Path(sim_episode).resolve()
        out = Path(out_dir) / (name or path.name)
        if is_complete_paired(out):
            return GroundTruthResult(out, skipped=True)
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
            return self._render(episode, out, cameras, max_frames, t_wall)

    def _render(self, ep: Episode, out: Path, cameras: list[str] | None,
                max_frames: int | None, t_wall: float) -> GroundTruthResult:
        path = ep.path
        sidecar = {k: v for k, v in ep.metadata.items() if k != 'bag_custom_data'}
        meta = generated_metadata(path, sidecar)
        typed = ep.meta
        task, layout = typed.task, meta['randomisation']
        if task not in self.config.tasks:
            raise NotGeneratedError(f'{path}: task {task!r} is not a bench-lab task '
                                    f'{sorted(self.config.tasks)}')
        streams = _scan(ep, cameras)
        lab = self._lab(streams.sizes)
        if sorted(streams.joint_names) != sorted(lab.joint_names):
            raise MissingStreamError(f'{path}: {JOINT_TOPIC} names joints {streams.joint_names}; '
                                     f'the bench-lab arm has {lab.joint_names}')
        order = [streams.joint_names.index(n) for n in lab.joint_names]
        track = JointTrack(streams.joint_t, streams.joint_q[:, order], lab.timestep)
        grip = _GripTrack(track, streams.command_t, streams.command_q[:, order[-1]])
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
        keep = {c: {s[i] for i in select_frames(len(s), max_frames)}
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
        items = tracked(lab)
        positions = {c: {'width': w, 'height': h, 'frames': {}}
                     for c, (w, h) in streams.sizes.items()}
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
                sim = image_to_rgb(msg, f'{path}:{topic}')
                writer.write_sim_image(cam, sim, t, log_ns, frame_id=msg.header.frame_id)
                positions[cam]['frames'][str(t)] = frame_positions(lab, cam, items, real, sim)
                frames[cam] += 1
            advance(int(streams.joint_t[-1]))
            drift = _drift(lab.task_state()['objects'], meta.get('final_object_states') or {})
            ok, reason = lab.check_success()
            wall = time.perf_counter() - t_wall
            (writer.partial / POSITIONS_FILE).write_text(json.dumps(
                {'format': POSITIONS_FORMAT, 'distortion': bool(self.realism.distortion),
                 'cameras': positions}))
            writer.finish({
                'episode': out.name, 'ground_truth': SOURCE, 'mode': 'kinematic',
                'sim_episode': path.name, 'source_episode': str(path), 'task': task,
                'seed': typed.seed, 'max_frames': max_frames, 'frames': frames,
                'sim_frames': {c: len(s) for c, s in streams.image_stamps.items()},
                'image_size': {c: list(s) for c, s in streams.sizes.items()},
                'object_drift_m': drift, 'sim_success': meta.get('success'),
                'bench_success': bool(ok), 'bench_success_reason': reason,
                'wall_s': round(wall, 3), 'positions': POSITIONS_FILE,
                'metadata': {'task': task, 'source': 'bench_ground_truth',
                             'sim_source': str(path)}})
        except BaseException:
            writer.abort()
            raise
        return GroundTruthResult(out, False, frames, wall, drift)


def _drift(bench: dict[str, dict], sim: dict[str, dict]) -> dict[str, float]:
    """Distance (m) between each object's bench-lab and sim final position."""
    return {n: round(float(np.linalg.norm(np.asarray(bench[n]['pos'])
                                          - np.asarray(s['pos'], float))), 5)
            for n, s in sim.items() if n in bench and 'pos' in s}


def render_ground_truth(sim_episode: str | Path, out_dir: str | Path,
                        lab_config: LabConfig | str | Path = DEFAULT_LAB,
                        realism: RealismProfile | str | Path = DEFAULT_REALISM,
                        cameras: list[str] | None = None,
                        max_frames: int | None = None) -> GroundTruthResult:
    """One sim episode -> ``out_dir/<name>`` ground-truth paired episode (see module doc)."""
    with GroundTruthRenderer(lab_config, realism) as renderer:
        return renderer.render(sim_episode, out_dir, cameras, max_frames)


def find_sim_episodes(path: str | Path) -> list[Path]:
    """``path`` itself when it is an episode, else the episodes under it (hidden dirs skipped)."""
    path = Path(path)
    if not path.exists():
        raise NotGeneratedError(f'no such sim episode or directory: {path}')
    found = find_episodes(path)
    if not found:
        raise NotGeneratedError(f'{path} holds no episode (no metadata.yaml under it)')
    return found


@cli_main('comsim-bench-lab-ground-truth')
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog='comsim-bench-lab-ground-truth',
        description='Render bench-lab ground truth (paired episodes: /real = bench lab with '
                    'realism, /sim = the sim frames) for episodes generated by the twin.')
    ap.add_argument('sim', nargs='+', help='sim episode directories, or folders of them')
    ap.add_argument('--out', required=True, help='output folder (one paired episode per input)')
    ap.add_argument('--lab', default=DEFAULT_LAB)
    ap.add_argument('--realism', default=DEFAULT_REALISM)
    ap.add_argument('--cameras', nargs='*', default=None, help='default: every sim camera')
    ap.add_argument('--max-frames', type=int, default=0,
                    help='frames per camera, spread over the episode (0: all)')
    args = ap.parse_args(argv)
    failed, episodes = 0, []
    for sim in args.sim:
        try:
            episodes += find_sim_episodes(sim)
        except GroundTruthError as exc:
            failed += 1
            print(f'error: {exc}', file=sys.stderr)
    try:
        renderer = GroundTruthRenderer(resolve_config_path(args.lab),
                                       resolve_config_path(args.realism))
    except (KeyError, ValueError) as exc:  # the realism profile's plain ones: still the user's
        raise UserError(str(exc.args[0] if exc.args else exc)) from exc
    with renderer:
        for ep in episodes:
            try:
                res = renderer.render(ep, args.out, args.cameras, args.max_frames or None)
            except (GroundTruthError, EpisodeError) as exc:
                failed += 1
                print(f'error: {exc}', file=sys.stderr)
                continue
            if res.skipped:
                print(f'skip {ep.name}: {res.path} is complete')
                continue
            worst = max(res.object_drift_m.values(), default=0.0)
            print(f'{ep.name}: {sum(res.frames.values())} frames {res.frames} in '
                  f'{res.wall_s:.1f} s, max object drift {worst * 1000:.1f} mm -> {res.path}')
    if failed:
        print(f'{failed} input(s) failed', file=sys.stderr)
    return 2 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
