"""Where the ComSim launch files and configs are: share/comsim_bringup on a ROS install, the
checkout on a pip or editable one. The lookup itself lives in `comsim_core.paths`, which every
node uses, so launch files and nodes cannot disagree."""
from __future__ import annotations

from pathlib import Path


def share_directory() -> Path:
    """The folder holding launch/ and config/ (see `comsim_core.paths.share_root`)."""
    from comsim_core.paths import share_root

    return share_root()
