"""The one exception calibration raises, so callers can tell bad input from a bug."""
from __future__ import annotations

from comsim_core.errors import UserError


class CalibrationError(UserError, ValueError):
    """Calibration input that cannot give a calibration (too few views, board never found,
    malformed calibration YAML...). The message names the camera, file or key at fault."""
