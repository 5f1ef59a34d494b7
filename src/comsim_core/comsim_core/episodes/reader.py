"""``Episode``: the one reader every later stage uses (twin, neural sim, policy).

Opens a recorded episode directory (rosbag2, MCAP or sqlite3, plus ``episode.yaml``) with
``rosbags``; decodes with the bag's own message definitions (tolerant of rclpy's trailing bytes,
see ``decode.py``); aligns cameras, joint states and commands into ``Frame``s.

Integrity: the recorder writes MCAP chunk CRCs and rosbags checks each chunk against its CRC as
it reads it, so damaged bytes raise ``CorruptEpisodeError`` naming the episode (and suggesting
``comsim-recover``, which skips the damaged chunk) instead of reading back as wrong pixels.
Bags written before CRCs were on (all CRCs 0) cannot be checked.
"""

from __future__ import annotations

from collections import deque
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from rosbags.highlevel import AnyReader
from rosbags.typesys import Stores, get_typestore

from .align import hold_at, interpolate_at, merge_trajectories
from .decode import deserialize_tolerant, joint_states_from_cdr
from .errors import (
    AlignmentError,
    CorruptEpisodeError,
    EpisodeError,
    EpisodeNotFoundError,
    MissingTopicError,
    WrongEncodingError,
)
from .images import decode_rgb, stamp_ns
from .meta import EpisodeMeta
from .sidecar import load_yaml, read_sidecar, sidecar_path
from .types import Commands, Frame, JointStates, StreamInfo

if TYPE_CHECKING:
    from collections.abc import Iterator

    from rosbags.interfaces import Connection

IMAGE = 'sensor_msgs/msg/Image'
COMPRESSED = 'sensor_msgs/msg/CompressedImage'
JOINT_STATE = 'sensor_msgs/msg/JointState'
TRAJECTORY = 'trajectory_msgs/msg/JointTrajectory'
FLOAT_ARRAY = 'std_msgs/msg/Float64MultiArray'


def _storage_files(path: Path) -> list[Path]:
    return sorted([*path.glob('*.mcap'), *path.glob('*.db3')])


class FrameStream:
    """Iterable of ``Frame``s; ``skipped`` counts frames dropped by ``skip_unaligned``."""

    def __init__(self, episode: Episode, cameras: list[str], joint_topic: str,
                 command_topic: str | None, tolerance_s: float | None,
                 skip_unaligned: bool) -> None:
        self.skipped = 0
        self.skip_reasons: list[str] = []
        self._args = (episode, cameras, joint_topic, command_topic, tolerance_s, skip_unaligned)

    def __iter__(self) -> Iterator[Frame]:
        episode, cameras, joint_topic, command_topic, tolerance_s, skip = self._args
        if not cameras:
            raise EpisodeError('frames() needs at least one camera topic')
        for topic in [*cameras, joint_topic, *([command_topic] if command_topic else [])]:
            episode.require(topic)
        if tolerance_s is None:
            rate = episode.streams[cameras[0]].rate_hz
            if rate is None:
                raise AlignmentError(f'cannot derive a tolerance: {cameras[0]} has no rate; '
                                     f'pass tolerance_s', float('inf'))
            tolerance_s = 0.5 / rate
        tol_ns = tolerance_s * 1e9
        joints = episode.joint_states(joint_topic)
        cmds = episode.commands(command_topic) if command_topic else None
        others = {c: _Nearest(episode.images(c), tol_ns) for c in cameras[1:]}
        for t, img in episode.images(cameras[0]):
            try:
                images = {cameras[0]: img}
                stamps = {cameras[0]: t}
                for cam, near in others.items():
                    stamps[cam], images[cam] = near.at(t, cam)
                q = interpolate_at(joints.t_ns, joints.position, t, tol_ns,
                                   f'joint states on {joint_topic}')
            except AlignmentError as exc:
                if not skip:
                    raise
                self.skipped += 1
                self.skip_reasons.append(str(exc))
                continue
            cmd = hold_at(cmds.t_ns, cmds.position, t) if cmds is not None else None
            yield Frame(t, images, q, cmd, stamps)


class _Nearest:
    """Streaming nearest-stamp lookup over a (mostly) time-ordered image iterator."""

    def __init__(self, source: Iterator[tuple[int, np.ndarray]], tol_ns: float) -> None:
        self.source = source
        self.tol_ns = tol_ns
        self.buf: deque[tuple[int, np.ndarray]] = deque()
        self.done = False

    def at(self, t: int, name: str) -> tuple[int, np.ndarray]:
        while not self.done and (not self.buf or self.buf[-1][0] <= t + self.tol_ns):
            try:
                self.buf.append(next(self.source))
            except StopIteration:
                self.done = True
        while len(self.buf) > 1 and self.buf[0][0] < t - self.tol_ns:
            self.buf.popleft()
        if not self.buf:
            raise AlignmentError(f'{name}: no image at all near t={t} ns', float('inf'))
        st, img = min(self.buf, key=lambda x: abs(x[0] - t))
        gap = abs(st - t)
        if gap > self.tol_ns:
            raise AlignmentError(f'{name}: nearest image is {gap / 1e9:.4f} s from t={t} ns '
                                 f'(tolerance {self.tol_ns / 1e9:.4f} s)', gap / 1e9)
        return st, img


class Episode:
    """A recorded episode, opened read-only. Use as a context manager or call ``close()``."""

    def __init__(self, path: Path, reader: AnyReader, metadata: dict[str, Any]) -> None:
        self.path = path
        self._reader = reader
        self.metadata = metadata
        self._streams: dict[str, StreamInfo] | None = None
        self._open = True

    # ------------------------------------------------------------------ opening
    @classmethod
    def open(cls, path: Path | str, distro: Stores = Stores.ROS2_KILTED) -> Episode:
        """Open an episode directory; raises EpisodeNotFoundError / CorruptEpisodeError."""
        path = Path(path)
        if path.is_file() and path.suffix in {'.mcap', '.db3', '.yaml'}:
            path = path.parent
        if not path.is_dir():
            raise EpisodeNotFoundError(f'no episode directory at {path}')
        if not (path / 'metadata.yaml').exists():
            if _storage_files(path):
                raise CorruptEpisodeError(path, 'metadata.yaml is missing (recording crashed or '
                                                'was killed before closing)')
            raise EpisodeNotFoundError(f'{path} holds no rosbag2 (no metadata.yaml, .mcap, .db3)')
        reader = AnyReader([path], default_typestore=get_typestore(distro))
        try:
            reader.open()
        except Exception as exc:  # rosbags raises several types for damaged files
            raise CorruptEpisodeError(path, f'{type(exc).__name__}: {exc}') from exc
        return cls(path, reader, _load_metadata(path))

    def close(self) -> None:
        """Release the bag files."""
        if self._open:
            self._open = False
            self._reader.close()

    def __enter__(self) -> Episode:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def meta(self) -> EpisodeMeta:
        """The typed fields of the sidecar's ``metadata`` block (task, seed, region, ...)."""
        return EpisodeMeta.from_dict(self.metadata.get('metadata'), str(sidecar_path(self.path)))

    # ------------------------------------------------------------------ streams
    @property
    def connections(self) -> list[Connection]:
        """The bag's connections (topic, type, message definition, QoS), for copying a bag."""
        return list(self._reader.connections)

    @property
    def topics(self) -> list[str]:
        """Topic names in the bag."""
        return sorted({c.topic for c in self._reader.connections})

    def require(self, topic: str) -> list[Connection]:
        """The connections of ``topic``; MissingTopicError names the available topics."""
        conns = [c for c in self._reader.connections if c.topic == topic]
        if not conns:
            raise MissingTopicError(topic, self.topics, self.path)
        return conns

    def msgtype(self, topic: str) -> str:
        """The message type of ``topic``, from the bag's index (no scan, unlike ``streams``)."""
        return self.require(topic)[0].msgtype

    @property
    def streams(self) -> dict[str, StreamInfo]:
        """Per topic: type, count, first/last log time, rate (one scan, cached)."""
        if self._streams is None:
            first: dict[str, int] = {}
            last: dict[str, int] = {}
            count: dict[str, int] = {}
            for conn, t, _ in self._iter_raw(self._reader.connections):
                first.setdefault(conn.topic, t)
                first[conn.topic] = min(first[conn.topic], t)
                last[conn.topic] = max(last.get(conn.topic, t), t)
                count[conn.topic] = count.get(conn.topic, 0) + 1
            self._streams = {
                topic: StreamInfo(topic, self.require(topic)[0].msgtype, count.get(topic, 0),
                                  first.get(topic), last.get(topic))
                for topic in self.topics}
        return self._streams

    def _iter_raw(self, conns: list[Connection]) -> Iterator[tuple[Connection, int, bytes]]:
        try:
            yield from self._reader.messages(connections=conns)
        except EpisodeError:
            raise
        except Exception as exc:  # truncated chunk, bad record...
            raise CorruptEpisodeError(self.path, f'{type(exc).__name__}: {exc}') from exc

    def raw_messages(self, topics: list[str]) -> Iterator[tuple[str, str, int, bytes]]:
        """(topic, msgtype, log time ns, serialized bytes) of several topics, merged in log-time
        order and not decoded (``decode`` what is needed): one pass for a replay."""
        conns = [c for topic in topics for c in self.require(topic)]
        return ((c.topic, c.msgtype, t, raw) for c, t, raw in self._iter_raw(conns))

    def messages(self, topic: str) -> Iterator[tuple[int, Any]]:
        """(log time ns, decoded message) of one topic, in log-time order."""
        conns = self.require(topic)  # eager: MissingTopicError at call time, not first next()
        return self._decoded(conns, topic)

    def _decoded(self, conns: list[Connection], topic: str) -> Iterator[tuple[int, Any]]:
        for conn, t, raw in self._iter_raw(conns):
            yield t, self.decode(raw, conn.msgtype, topic)

    def decode(self, raw: bytes, msgtype: str, topic: str) -> Any:
        """One serialized message as a message object; CorruptEpisodeError where it cannot."""
        try:
            return deserialize_tolerant(self._reader.typestore, raw, msgtype)
        except Exception as exc:
            raise CorruptEpisodeError(self.path, f'cannot decode a {msgtype} on {topic}: {exc}',
                                      recoverable=False) from exc

    # ------------------------------------------------------------------ typed views
    def images(self, topic: str) -> Iterator[tuple[int, np.ndarray]]:
        """(header stamp ns, RGB uint8 HxWx3) per image; log time where the stamp is zero."""
        msgtype = self.require(topic)[0].msgtype
        if msgtype not in {IMAGE, COMPRESSED}:
            raise WrongEncodingError(f'{topic} is a {msgtype}, not an image topic')
        where = f'{self.path}:{topic}'
        return ((stamp_ns(msg.header) or t, decode_rgb(msg, where))
                for t, msg in self.messages(topic))

    def joint_states(self, topic: str = '/joint_states') -> JointStates:
        """All JointState samples, columns in the first message's name order."""
        self._expect(topic, {JOINT_STATE})
        log_ns, raws = [], []
        for _, _, t, raw in self.raw_messages([topic]):   # read once, decoded either way
            log_ns.append(t)
            raws.append(raw)
        at_once = self._joint_states_at_once(topic, log_ns, raws)
        if at_once is not None:
            return at_once
        names: list[str] | None = None
        ts: list[int] = []
        rows: dict[str, list[np.ndarray]] = {'position': [], 'velocity': [], 'effort': []}
        for t, raw in zip(log_ns, raws):
            msg = self.decode(raw, JOINT_STATE, topic)
            msg_names = list(msg.name)
            if names is None:
                names = msg_names
            if sorted(msg_names) != sorted(names):
                raise CorruptEpisodeError(self.path, f'{topic}: joint names changed from '
                                          f'{names} to {msg_names}', recoverable=False)
            order = [msg_names.index(n) for n in names]
            ts.append(stamp_ns(msg.header) or t)
            for field in rows:
                arr = np.asarray(getattr(msg, field), dtype=np.float64)
                rows[field].append(arr[order] if arr.size == len(msg_names)
                                   else np.full(len(names), np.nan))
        names = names or []
        return _sorted_joint_states(np.asarray(ts, dtype=np.int64), names,
                                    [np.stack(v) if v else np.zeros((0, len(names)))
                                     for v in rows.values()])

    def _joint_states_at_once(self, topic: str, log_ns: list[int],
                              raws: list[bytes]) -> JointStates | None:
        """The samples decoded in one go (``joint_states_from_cdr``) when they share one layout,
        checked against rosbags on the first message; None: decode them one by one."""
        decoded = joint_states_from_cdr(raws)
        if decoded is None:
            return None
        names, stamps, values = decoded
        first = self.decode(raws[0], JOINT_STATE, topic)
        if list(first.name) != names or stamp_ns(first.header) != stamps[0]:
            return None
        n, j = len(raws), len(names)
        columns = []
        for field, value in zip(('position', 'velocity', 'effort'), values):
            if not np.array_equal(np.asarray(getattr(first, field), np.float64),
                                  value[0] if value is not None else np.zeros(0),
                                  equal_nan=True):   # drivers publish NaN efforts
                return None
            columns.append(value if value is not None and value.shape[1] == j
                           else np.full((n, j), np.nan))
        t_ns = np.where(stamps != 0, stamps, np.asarray(log_ns, dtype=np.int64))
        return _sorted_joint_states(t_ns, names, columns)

    def commands(self, topic: str) -> Commands:
        """Commanded positions and the absolute times they take effect (see module docs)."""
        msgtype = self._expect(topic, {TRAJECTORY, FLOAT_ARRAY})
        if msgtype == FLOAT_ARRAY:
            pairs = [(t, np.asarray(m.data, dtype=np.float64)) for t, m in self.messages(topic)]
            t_arr = np.asarray([p[0] for p in pairs], dtype=np.int64)
            pos = np.stack([p[1] for p in pairs]) if pairs else np.zeros((0, 0))
            return Commands(t_arr, pos, None, msgtype)
        segments = []
        names: list[str] | None = None
        for t, msg in self.messages(topic):
            if names is None:
                names = list(msg.joint_names)
            order = [list(msg.joint_names).index(n) for n in names]
            base = stamp_ns(msg.header) or t
            times = [base + int(p.time_from_start.sec) * 10**9 + int(p.time_from_start.nanosec)
                     for p in msg.points]
            pos = [np.asarray(p.positions, dtype=np.float64)[order] for p in msg.points]
            segments.append((base, np.asarray(times, dtype=np.int64),
                             np.stack(pos) if pos else np.zeros((0, len(names)))))
        t_arr, pos_arr = merge_trajectories(segments)
        return Commands(t_arr, pos_arr, names, msgtype)

    def frames(self, cameras: list[str], joint_topic: str = '/joint_states',
               command_topic: str | None = None, tolerance_s: float | None = None,
               skip_unaligned: bool = False) -> FrameStream:
        """One ``Frame`` per image of ``cameras[0]``; see ``FrameStream`` for skip counts."""
        return FrameStream(self, list(cameras), joint_topic, command_topic, tolerance_s,
                           skip_unaligned)

    def _expect(self, topic: str, msgtypes: set[str]) -> str:
        msgtype = self.msgtype(topic)
        if msgtype not in msgtypes:
            raise WrongEncodingError(f'{topic} is a {msgtype}; expected one of {sorted(msgtypes)}')
        return msgtype


def _sorted_joint_states(t_ns: np.ndarray, names: list[str],
                         columns: list[np.ndarray]) -> JointStates:
    """JointStates in stamp order (stable: equal stamps keep their log order)."""
    order = np.argsort(t_ns, kind='stable')
    return JointStates(t_ns[order], names, *(c[order] for c in columns))


def _load_metadata(path: Path) -> dict[str, Any]:
    """episode.yaml content, plus the bag's custom_data under ``bag_custom_data``."""
    meta = dict(read_sidecar(path) or {})
    info = load_yaml((path / 'metadata.yaml').read_text(encoding='utf8')) or {}
    custom = (info.get('rosbag2_bagfile_information') or {}).get('custom_data') or {}
    meta['bag_custom_data'] = custom
    if 'metadata' not in meta and 'comsim.metadata' in custom:
        meta['metadata'] = load_yaml(custom['comsim.metadata'])
    return meta
