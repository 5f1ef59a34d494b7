"""The one interface every twin backend implements (MuJoCo embedded, Isaac Sim on RTX GPUs)."""
from __future__ import annotations

from typing import Protocol

import numpy as np

from comsim_twin.scene import TwinScene


class BackendUnavailableError(RuntimeError):
    """The simulator behind a backend is not installed or cannot run on this machine."""


class Exposure(Protocol):
    """A camera's snapshot on its way to an image (``TwinBackend.capture``).

    Two steps, so that each runs where it is cheapest: ``render()`` draws the snapshot (GL: in
    the thread that owns the renderers), ``image()`` then gives the camera's image in any
    thread (the lens warp runs there, off the render loop) and is computed once.
    """

    def render(self) -> None: ...

    def image(self) -> np.ndarray: ...


class ReadyExposure:
    """An Exposure of an image rendered already (a backend without a cheap snapshot)."""

    def __init__(self, image: np.ndarray) -> None:
        self._image = image

    def render(self) -> None:
        return None

    def image(self) -> np.ndarray:
        return self._image


class TwinBackend(Protocol):
    """Build a scene, drive the arm, step physics, render the calibrated cameras."""

    joint_names: list[str]
    camera_names: list[str]
    timestep: float

    def build(self, scene: TwinScene) -> None:
        """(Re)build the world from a twin scene; the arm starts at the robot's home pose."""

    def set_joint_positions(self, q: np.ndarray, qd: np.ndarray | None = None) -> None:
        """Kinematic: place the arm (and gripper) exactly at q, moving at qd (None: at rest).

        qd matters when physics runs between placements: contacts with the objects the arm
        pushes see the arm's velocity, which a zero velocity would make look like a wall."""

    def step_kinematic(self, q: np.ndarray, qd: np.ndarray) -> None:
        """One physics step per row of q (n x joints): the arm placed at q[i] moving at qd[i]
        for step i, objects under physics; set_joint_positions + step(1) per row, in one call
        (a replay runs thousands of these per episode)."""

    def step_commanded(self, q: np.ndarray) -> None:
        """One physics step per row of q (n x joints) with the actuators commanded to q[i]:
        command_positions + step(1) per row, in one call."""

    def command_positions(self, q: np.ndarray) -> None:
        """Dynamic: position targets for the arm's actuators."""

    def step(self, n: int = 1) -> None:
        """Advance physics n steps."""

    @property
    def time(self) -> float: ...

    def joint_positions(self) -> np.ndarray: ...

    def render(self, camera: str, distort: bool = True) -> np.ndarray:
        """HxWx3 uint8 RGB through the calibrated camera model (distortion included).

        distort=False: the ideal pinhole view of the same calibration (K, W x H)."""

    def capture(self, camera: str, distort: bool = True) -> Exposure:
        """Fix what ``camera`` sees now, to be rendered later, also after physics has moved on
        (until the camera's next capture). Lets a replay step physics while it renders; a
        backend without a cheap snapshot renders at once (``ReadyExposure``)."""

    def render_segmentation(self, camera: str, distort: bool = True) -> dict[str, np.ndarray]:
        """Boolean mask per object name (for alignment by render-and-compare)."""

    def capture_objects(self, camera: str, distort: bool = True) -> Exposure:
        """Like ``capture``, of which object each pixel shows: image() is HxW uint8, 1 + the
        index into ``object_names``, 0 elsewhere (``objects_exposure`` for a backend without
        it)."""

    def set_object_pose(self, name: str, pos: np.ndarray,
                        quat: np.ndarray = (1.0, 0.0, 0.0, 0.0)) -> None:
        """Place object `name` at centre pos (base frame), orientation quat (w x y z), at rest."""

    def object_states(self) -> dict[str, dict]:
        """name -> {'pos': [3], 'quat': [4], 'lin_vel': [3], 'ang_vel': [3]}."""

    def close(self) -> None: ...


def objects_exposure(backend: object, camera: str) -> Exposure:
    """``backend.capture_objects(camera)``; from its ``render_segmentation`` at once where it
    has no such snapshot."""
    capture = getattr(backend, 'capture_objects', None)
    if capture is not None:
        return capture(camera)
    masks = backend.render_segmentation(camera)
    names = list(getattr(backend, 'object_names', masks))
    first = next(iter(masks.values()))
    labels = np.zeros(first.shape[:2], dtype=np.uint8)
    for i, name in enumerate(names):
        if name in masks:
            labels[masks[name]] = i + 1
    return ReadyExposure(labels)


def scale_lights(backend: object, factor: float) -> None:
    """Light a built backend's scene at ``factor`` times its built intensity (appearance
    randomisation); a backend that cannot keeps its lights as built."""
    scale = getattr(backend, 'scale_lights', None)
    if scale is not None:
        scale(factor)
