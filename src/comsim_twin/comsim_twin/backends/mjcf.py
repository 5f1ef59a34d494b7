"""Compose the twin's MuJoCo model (MjSpec) from a TwinScene: robot, table, table markers,
objects, cameras.

Flat colours and shadowless lights: the twin renders what the lab's geometry implies, fast;
appearance gaps are the neural simulator's job. The one exception is an optional procedural
table texture (domain randomisation); without it the table stays a flat colour. Knows nothing
about the bench lab.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import mujoco
import numpy as np

from comsim_core.camera import Lens, configure_camera
from comsim_core.geometry import yaw_quat
from comsim_twin.scene import TableTexture, TwinMarker, TwinObject, TwinScene

ROBOT_PREFIX = 'robot/'
TIMESTEP = 0.002
TABLE_HALF_THICKNESS = 0.02
FLOOR_Z = -0.75                   # the floor only shows as background under the table
NECK_FRACTION = (0.4, 0.3)        # bottle neck radius, half-height as fractions of the body's
_ACTUATOR_GAINS = (900.0, 45.0)   # kp, kv for joints the robot model leaves unactuated
MARKER_HALF_THICKNESS = 0.0004    # tape on the table: thick enough not to z-fight the top
MARKER_GROUP = 1                  # visual geom group (as the lab draws its marks)
TEXTURE_TEXELS = 64               # texture side; noise repeats every TEXTURE_TEXELS cells
NOISE_FRACTION = 0.35             # share of noise specks drawn in color2


@dataclass
class TwinModel:
    model: mujoco.MjModel
    lenses: dict[str, Lens]
    object_names: list[str]
    marker_names: list[str] = field(default_factory=list)


def _rgba(color) -> list[float]:
    c = [float(v) for v in np.asarray(color, float).reshape(-1)]
    return c + [1.0] if len(c) == 3 else c


def bottle_neck(obj: TwinObject) -> tuple[float, float]:
    """(radius, half_height) of a bottle's neck: size[2:4] when given, else a default ratio."""
    if len(obj.size) >= 4:
        return float(obj.size[2]), float(obj.size[3])
    return NECK_FRACTION[0] * obj.size[0], NECK_FRACTION[1] * obj.size[1]


def _check_object(obj: TwinObject) -> None:
    need = {'box': (3,), 'cylinder': (2,), 'bottle': (2, 4)}[obj.shape]
    if len(obj.size) not in need:
        raise ValueError(f'object {obj.name!r} ({obj.shape}) needs size of length '
                         f'{" or ".join(map(str, need))}, got {obj.size}')
    if min(obj.size) <= 0:
        raise ValueError(f'object {obj.name!r}: sizes must be positive, got {obj.size}')


def _add_object(spec: mujoco.MjSpec, obj: TwinObject) -> None:
    _check_object(obj)
    body = spec.worldbody.add_body()
    body.name = obj.name
    body.pos = [float(v) for v in obj.pos]
    body.quat = [float(v) for v in obj.quat]
    body.add_freejoint().name = f'{obj.name}_free'
    geom = body.add_geom()
    geom.name = obj.name
    box = obj.shape == 'box'
    geom.type = mujoco.mjtGeom.mjGEOM_BOX if box else mujoco.mjtGeom.mjGEOM_CYLINDER
    geom.size = list(obj.size[:3]) if box else [obj.size[0], obj.size[1], 0.0]
    geom.rgba = _rgba(obj.color)
    geom.friction = [obj.friction, 0.01, 0.0005]
    geom.condim = 4
    geom.solref = [0.004, 1.0]
    geom.mass = obj.mass
    if obj.shape == 'bottle':
        r, hh = bottle_neck(obj)
        neck = body.add_geom()
        neck.name = f'{obj.name}_neck'
        neck.type = mujoco.mjtGeom.mjGEOM_CYLINDER
        neck.size = [r, hh, 0.0]
        neck.pos = [0.0, 0.0, obj.size[1] + hh]
        neck.rgba = geom.rgba
        neck.friction = geom.friction
        neck.condim = 4
        body_vol, neck_vol = np.pi * obj.size[0] ** 2 * obj.size[1], np.pi * r ** 2 * hh
        geom.mass = obj.mass * body_vol / (body_vol + neck_vol)
        neck.mass = obj.mass - geom.mass


def _add_marker(spec: mujoco.MjSpec, marker: TwinMarker) -> None:
    """A thin box lying on the table top that nothing collides with (contype/conaffinity 0)."""
    if len(marker.size) != 2 or min(marker.size) <= 0:
        raise ValueError(f'marker {marker.name!r} needs size [half x, half y] > 0, '
                         f'got {marker.size}')
    geom = spec.worldbody.add_geom()
    geom.name = marker.name
    geom.type = mujoco.mjtGeom.mjGEOM_BOX
    geom.size = [float(marker.size[0]), float(marker.size[1]), MARKER_HALF_THICKNESS]
    geom.pos = [float(marker.pos[0]), float(marker.pos[1]), MARKER_HALF_THICKNESS]
    geom.quat = yaw_quat(float(marker.yaw)).tolist()
    geom.rgba = _rgba(marker.color)
    geom.contype = 0
    geom.conaffinity = 0
    geom.group = MARKER_GROUP
    geom.mass = 0.0


def _stripes(texture: TableTexture, color) -> bytes:
    """RGB texels: two stripes (table colour, color2) across the texture's width."""
    half = TEXTURE_TEXELS // 2
    row = np.empty((TEXTURE_TEXELS, 3), np.uint8)
    row[:half] = np.round(np.clip(color, 0, 1) * 255)
    row[half:] = np.round(np.clip(texture.color2, 0, 1) * 255)
    return np.tile(row, (TEXTURE_TEXELS, 1, 1)).tobytes()


def _texture_table(spec: mujoco.MjSpec, table, color, texture: TableTexture) -> None:
    """Give the table a material with a procedural 2D texture; `scale` metres per cell.

    texuniform makes texrepeat count repeats per metre, so the pattern's size on the table
    does not depend on the table's size. Geom and material stay white: the texture carries
    both colours (MuJoCo multiplies texture by rgba).
    """
    tex = spec.add_texture()
    tex.name = 'table_texture'
    tex.type = mujoco.mjtTexture.mjTEXTURE_2D
    tex.width = tex.height = TEXTURE_TEXELS
    tex.rgb1 = [float(v) for v in color]
    tex.rgb2 = [float(v) for v in texture.color2]
    if texture.kind == 'checker':          # 2 x 2 squares per texture
        tex.builtin = mujoco.mjtBuiltin.mjBUILTIN_CHECKER
        cells = 2
    elif texture.kind == 'noise':          # one speck per texel
        tex.builtin = mujoco.mjtBuiltin.mjBUILTIN_FLAT
        tex.mark = mujoco.mjtMark.mjMARK_RANDOM
        tex.random = NOISE_FRACTION
        tex.markrgb = [float(v) for v in texture.color2]
        cells = TEXTURE_TEXELS
    else:                                  # stripes: 2 per texture, MuJoCo has no builtin
        tex.nchannel = 3
        tex.data = _stripes(texture, color)
        cells = 2
    mat = spec.add_material()
    mat.name = 'table_material'
    mat.textures[mujoco.mjtTextureRole.mjTEXROLE_RGB] = tex.name
    mat.texuniform = True
    repeat = 1.0 / (cells * float(texture.scale))
    mat.texrepeat = [repeat, repeat]
    mat.rgba = [1.0, 1.0, 1.0, 1.0]
    table.material = mat.name
    table.rgba = [1.0, 1.0, 1.0, 1.0]


def _add_missing_actuators(spec: mujoco.MjSpec, joints: list[str]) -> None:
    """Position actuators (like the project arm's) for arm joints a user model leaves bare."""
    actuated = {a.target for a in spec.actuators}
    for name in joints:
        if name in actuated:
            continue
        act = spec.add_actuator()
        act.name = f'{name}_position'
        act.target = name
        act.trntype = mujoco.mjtTrn.mjTRN_JOINT
        kp, kv = _ACTUATOR_GAINS
        act.set_to_position(kp=kp, kv=kv)


def compose(scene: TwinScene, robot_path: str, actuated_joints: list[str],
            shadows: bool = False) -> TwinModel:
    """Compile the twin's model; robot joints get the ``robot/`` prefix."""
    spec = mujoco.MjSpec()
    spec.modelname = 'comsim_twin'
    spec.option.timestep = TIMESTEP
    spec.option.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    spec.option.cone = mujoco.mjtCone.mjCONE_ELLIPTIC
    spec.option.impratio = 10.0
    spec.visual.headlight.ambient = [0.25, 0.25, 0.25]
    spec.visual.headlight.diffuse = [0.35, 0.35, 0.35]
    spec.visual.quality.offsamples = 2

    table = spec.worldbody.add_geom()
    table.name = 'table'
    table.type = mujoco.mjtGeom.mjGEOM_BOX
    table.size = [float(scene.table_size[0]), float(scene.table_size[1]), TABLE_HALF_THICKNESS]
    table.pos = [float(scene.table_center[0]), float(scene.table_center[1]),
                 -TABLE_HALF_THICKNESS]
    table.rgba = _rgba(scene.table_color)
    table.friction = [0.6, 0.005, 0.0001]
    texture = scene.table_texture
    if texture is not None and texture.check().kind != 'none':   # 'none': flat, as absent
        _texture_table(spec, table, scene.table_color, texture)
    floor = spec.worldbody.add_geom()
    floor.name = 'floor'
    floor.type = mujoco.mjtGeom.mjGEOM_PLANE
    floor.size = [3.0, 3.0, 0.05]
    floor.pos = [0.0, 0.0, FLOOR_Z]
    floor.rgba = _rgba(scene.background_color)

    for marker in scene.markers.values():
        _add_marker(spec, marker)

    frame = spec.worldbody.add_frame()
    spec.attach(mujoco.MjSpec.from_file(robot_path), frame=frame, prefix=ROBOT_PREFIX)
    _add_missing_actuators(spec, actuated_joints)

    for obj in scene.objects.values():
        _add_object(spec, obj)

    lenses: dict[str, Lens] = {}
    for name, cam in scene.cameras.items():
        lens = Lens(cam.K, cam.D, cam.width, cam.height)
        mj_cam = spec.worldbody.add_camera()
        mj_cam.name = name
        configure_camera(mj_cam, lens, cam.T_base_camera)
        lenses[name] = lens
    spec.visual.global_.offwidth = max([64] + [ln.render_width for ln in lenses.values()])
    spec.visual.global_.offheight = max([64] + [ln.render_height for ln in lenses.values()])

    for pos, direction, diffuse in (([0.3, 0.0, 2.0], [0, 0, -1], [0.6, 0.6, 0.6]),
                                    ([1.5, 0.5, 1.5], [-0.7, -0.3, -0.6], [0.25, 0.25, 0.25])):
        light = spec.worldbody.add_light()
        light.pos, light.dir, light.diffuse = pos, direction, diffuse
        light.castshadow = shadows
    try:
        model = spec.compile()
    except ValueError as exc:
        raise ValueError(f'twin scene did not compile in MuJoCo: {exc}') from exc
    return TwinModel(model, lenses, list(scene.objects), list(scene.markers))
