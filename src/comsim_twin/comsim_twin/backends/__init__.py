"""Twin simulator backends behind one protocol (``TwinBackend``); ``make_backend`` picks one.

MuJoCo is embedded and runs anywhere (CPU, EGL); Isaac Sim needs an RTX GPU and its own
install, so it is imported only when asked for.
"""
from __future__ import annotations

from comsim_twin.backends.base import BackendUnavailableError, Exposure, TwinBackend

BACKENDS = ('mujoco', 'isaac')


def make_backend(name: str = 'mujoco', **options) -> TwinBackend:
    """A fresh, unbuilt backend by name ('mujoco' or 'isaac'); options go to its constructor."""
    if name == 'mujoco':
        from comsim_twin.backends.mujoco_backend import MujocoTwin
        return MujocoTwin(**options)
    if name == 'isaac':
        from comsim_twin.backends.isaac_backend import IsaacTwin
        return IsaacTwin(**options)
    raise ValueError(f'unknown twin backend {name!r}; choose one of {BACKENDS}')


__all__ = ['BACKENDS', 'BackendUnavailableError', 'Exposure', 'TwinBackend', 'make_backend']
