"""What each ROS 2 distro's rosbag2 reads, so a bag is written in the form the lab's distro parses.

Why: rosbag2 changed `metadata.yaml` across distros (rosbag2_storage's BagMetadata `version`):
Humble writes and reads version 5, where `offered_qos_profiles` is YAML *text* with integer
policies; Jazzy and Kilted write version 9, where it is a YAML list with policy names. Humble's
`ros2 bag info` fails on a version-9 file ("yaml-cpp: bad conversion"). Humble ignores keys it
does not know, so `custom_data` (ComSim's metadata) and `ros_distro` stay in every version.
rosbags (our reader) reads versions up to 9 in either form.
"""
from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from rosbags.rosbag2.metadata import dump_qos_v8, dump_qos_v9, parse_qos
from rosbags.typesys import Stores

from ..errors import UserError
from .errors import BagWriterError

DEFAULT_DISTRO = 'kilted'


class UnknownDistroError(BagWriterError, UserError):
    """A distro name (parameter, config key) we have no bag format for: the user's to fix."""


@dataclass(frozen=True)
class BagFormat:
    """One distro's typestore and the metadata.yaml version its rosbag2 writes."""

    distro: str
    store: Stores
    metadata_version: int

    @property
    def qos_as_text(self) -> bool:
        """Versions before 9 keep offered_qos_profiles as YAML text (integer policies)."""
        return self.metadata_version < 9

    @property
    def type_hash(self) -> bool:
        """`type_description_hash` exists from version 7 (Iron) on."""
        return self.metadata_version >= 7


FORMATS: dict[str, BagFormat] = {
    'humble': BagFormat('humble', Stores.ROS2_HUMBLE, 5),
    'jazzy': BagFormat('jazzy', Stores.ROS2_JAZZY, 9),
    'kilted': BagFormat('kilted', Stores.ROS2_KILTED, 9),
}


def rosbags_version(distro: str | None) -> int:
    """The version to give rosbags' Writer (8 or 9) before `conform_bag`: same QoS form."""
    return 8 if bag_format(distro).qos_as_text else 9


def default_distro() -> str:
    """$ROS_DISTRO when it is one we write for (a sourced ROS install), else kilted."""
    env = os.environ.get('ROS_DISTRO', '').strip().lower()
    return env if env in FORMATS else DEFAULT_DISTRO


def bag_format(distro: str | None = None) -> BagFormat:
    """The format for a distro name; None or '' means `default_distro()`."""
    name = (distro or default_distro()).strip().lower()
    try:
        return FORMATS[name]
    except KeyError:
        raise UnknownDistroError(f'unknown distro {distro!r}; supported: {sorted(FORMATS)} '
                             "(or '' for $ROS_DISTRO, else kilted)") from None


def offered_qos(profiles: list[dict[str, Any]] | str | None,
                fmt: BagFormat) -> list[dict[str, Any]] | str:
    """`offered_qos_profiles` as `fmt` stores it: a list (v9) or YAML text (v5-v8), from either."""
    if fmt.qos_as_text:
        return dump_qos_v8(parse_qos(profiles or []))
    if isinstance(profiles, str):
        return list(dump_qos_v9(parse_qos(profiles)))
    return list(profiles or [])


def conform(info: dict[str, Any], fmt: BagFormat) -> dict[str, Any]:
    """`rosbag2_bagfile_information` rewritten for `fmt`: version, ros_distro, topic fields."""
    topics = []
    for entry in info.get('topics_with_message_count') or []:
        meta = dict(entry['topic_metadata'])
        meta['offered_qos_profiles'] = offered_qos(meta.get('offered_qos_profiles'), fmt)
        if not fmt.type_hash:
            meta.pop('type_description_hash', None)
        topics.append({**entry, 'topic_metadata': meta})
    return {**info, 'version': fmt.metadata_version, 'topics_with_message_count': topics,
            'ros_distro': fmt.distro}


def conform_bag(bag_dir: Path, distro: str | None) -> None:
    """Rewrite a closed bag written by rosbags' Writer (`rosbags_version(distro)`) for `distro`:
    rosbags writes version 8 or 9 with `ros_distro: rosbags`. metadata.yaml is replaced
    atomically; a .db3's own copy of it and its ros_distro are updated."""
    fmt = bag_format(distro)
    meta = Path(bag_dir) / 'metadata.yaml'
    doc = yaml.safe_load(meta.read_text(encoding='utf8'))
    info = conform(doc['rosbag2_bagfile_information'], fmt)
    text = yaml.safe_dump({'rosbag2_bagfile_information': info}, sort_keys=False,
                          default_flow_style=False)
    if info.get('storage_identifier') == 'sqlite3':
        for name in info.get('relative_file_paths') or []:
            _conform_db3(Path(bag_dir) / Path(name).name, info, fmt)
    tmp = meta.with_name('.metadata.yaml.tmp')
    tmp.write_text(text, encoding='utf8')
    os.replace(tmp, meta)


def _conform_db3(db: Path, info: dict[str, Any], fmt: BagFormat) -> None:
    """The schema table's ros_distro and the metadata table (rosbags wrote the topics' QoS
    text in the version it was given: 8 for text, 9 for names)."""
    conn = sqlite3.connect(db)
    try:
        with conn:
            conn.execute('UPDATE schema SET ros_distro = ?', (fmt.distro,))
            conn.execute('UPDATE metadata SET metadata_version = ?, metadata = ?',
                         (fmt.metadata_version, yaml.safe_dump(info, sort_keys=False)))
    finally:
        conn.close()
