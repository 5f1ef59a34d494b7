"""Compose the lab's MuJoCo model: table, robot (attached MJCF/URDF), task objects, cameras, lights.

One model carries both looks: plain (flat colours, no shadows, config lights only) and
realistic (textures, specular, shadows, extra lights). VisualStyles swaps the few model
arrays that differ just before rendering, so plain and realistic renders show the same state.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import mujoco
import numpy as np

from comsim_bench_lab.cameras import LensModel
from comsim_bench_lab.config import LabConfig, ObjectConfig
from comsim_bench_lab.realism import RealismProfile
from comsim_core.tasks.markers import TableMarker

ROBOT_PREFIX = 'robot/'
_SHAPE = {'box': mujoco.mjtGeom.mjGEOM_BOX, 'cylinder': mujoco.mjtGeom.mjGEOM_CYLINDER,
          'sphere': mujoco.mjtGeom.mjGEOM_SPHERE}


@dataclass
class VisualStyles:
    """Model arrays that differ between the plain and the realistic look."""

    arrays: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)

    def apply(self, model: mujoco.MjModel, realistic: bool) -> None:
        for name, (plain, real) in self.arrays.items():
            getattr(model, name)[:] = real if realistic else plain


@dataclass
class Scene:
    model: mujoco.MjModel
    lenses: dict[str, LensModel]
    styles: VisualStyles
    object_names: list[str]


def _rgba(color: np.ndarray) -> list[float]:
    c = list(np.asarray(color, float).reshape(-1))
    return c + [1.0] if len(c) == 3 else c


def _add_object(spec: mujoco.MjSpec, obj: ObjectConfig) -> None:
    body = spec.worldbody.add_body()
    body.name = obj.name
    body.pos = [0.0, 0.0, obj.half_height]
    joint = body.add_freejoint()
    joint.name = f'{obj.name}_free'
    geom = body.add_geom()
    geom.name = obj.name
    geom.type = _SHAPE[obj.shape]
    size = list(obj.size) + [0.0] * (3 - len(obj.size))
    geom.size = size
    geom.rgba = _rgba(obj.color)
    geom.friction = [obj.friction, 0.01, 0.0005]
    geom.condim = 4
    geom.solref = [0.004, 1.0]
    if obj.neck is not None:
        neck = body.add_geom()
        neck.name = f'{obj.name}_neck'
        neck.type = mujoco.mjtGeom.mjGEOM_CYLINDER
        neck.size = [obj.neck[0], obj.neck[1], 0.0]
        neck.pos = [0.0, 0.0, obj.size[-1] + obj.neck[1]]
        neck.rgba = _rgba(obj.color)
        neck.friction = geom.friction
        neck.condim = 4
        total = obj.mass
        body_vol = np.pi * obj.size[0] ** 2 * obj.size[1]
        neck_vol = np.pi * obj.neck[0] ** 2 * obj.neck[1]
        geom.mass = total * body_vol / (body_vol + neck_vol)
        neck.mass = total - geom.mass
    else:
        geom.mass = obj.mass


def lab_spec(cfg: LabConfig, realism: RealismProfile | None, name: str) -> mujoco.MjSpec:
    """The lab's empty room: physics and render options, the table and the floor."""
    spec = mujoco.MjSpec()
    spec.modelname = name
    spec.option.timestep = cfg.timestep
    spec.option.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    spec.option.cone = mujoco.mjtCone.mjCONE_ELLIPTIC
    spec.option.impratio = 10.0
    spec.visual.headlight.ambient = [0.25, 0.25, 0.25]
    spec.visual.headlight.diffuse = [0.35, 0.35, 0.35]
    spec.visual.quality.shadowsize = realism.shadow_size if realism else 1024
    spec.visual.quality.offsamples = 2
    t = cfg.table
    table = spec.worldbody.add_geom()
    table.name = 'table'
    table.type = mujoco.mjtGeom.mjGEOM_BOX
    table.size = [t.size[0] / 2, t.size[1] / 2, t.thickness / 2]
    table.pos = [t.center[0], t.center[1], -t.thickness / 2]
    table.rgba = _rgba(t.color)
    table.friction = [0.6, 0.005, 0.0001]
    floor = spec.worldbody.add_geom()
    floor.name = 'floor'
    floor.type = mujoco.mjtGeom.mjGEOM_PLANE
    floor.size = [3.0, 3.0, 0.05]
    floor.pos = [0.0, 0.0, -t.height]
    floor.rgba = [0.42, 0.42, 0.45, 1.0]
    return spec


def add_robot(spec: mujoco.MjSpec, robot_path: str) -> None:
    """The arm's MJCF at the world origin (= base frame), names prefixed ``ROBOT_PREFIX``."""
    spec.attach(mujoco.MjSpec.from_file(robot_path), frame=spec.worldbody.add_frame(),
                prefix=ROBOT_PREFIX)


def add_cameras(spec: mujoco.MjSpec, cfg: LabConfig) -> dict[str, LensModel]:
    """One MuJoCo camera per lab camera; the offscreen buffer fits the largest padded render."""
    lenses: dict[str, LensModel] = {}
    for name, cam_cfg in cfg.cameras.items():
        lens = LensModel(cam_cfg)
        cam = spec.worldbody.add_camera()
        cam.name = name
        lens.configure(cam)
        lenses[name] = lens
    spec.visual.global_.offwidth = max(64, *(ln.render_width for ln in lenses.values()))
    spec.visual.global_.offheight = max(64, *(ln.render_height for ln in lenses.values()))
    return lenses


def add_lights(spec: mujoco.MjSpec, cfg: LabConfig, realism: RealismProfile | None) -> None:
    """The configured lights; with realism also its extra lights and materials (the hidden look
    the twin does not copy)."""
    for light_cfg in cfg.lights:
        light = spec.worldbody.add_light()
        light.pos = light_cfg.position.tolist()
        light.dir = light_cfg.direction.tolist()
        light.diffuse = light_cfg.diffuse.tolist()
        light.castshadow = light_cfg.castshadow
    if realism is not None:
        for extra in realism.extra_lights:
            light = spec.worldbody.add_light()
            light.pos = list(map(float, extra.get('position', [0.5, 0.5, 1.5])))
            light.dir = list(map(float, extra.get('direction', [0, 0, -1])))
            light.diffuse = list(map(float, extra.get('diffuse', [0.3, 0.3, 0.3])))
            light.castshadow = bool(extra.get('castshadow', False))
        _add_realism_materials(spec, realism)


def build_scene(cfg: LabConfig, objects: dict[str, ObjectConfig], markers: list[TableMarker],
                realism: RealismProfile | None, robot_path: str) -> Scene:
    spec = lab_spec(cfg, realism, 'comsim_bench_lab')
    for marker in markers:
        geom = spec.worldbody.add_geom()
        geom.name = marker.name
        geom.type = mujoco.mjtGeom.mjGEOM_BOX
        geom.size = [marker.half_size[0], marker.half_size[1], 0.0004]
        geom.pos = [0.0, 0.0, 0.0004]
        geom.rgba = _rgba(np.asarray(marker.color))
        geom.contype = 0
        geom.conaffinity = 0
        geom.group = 1
    add_robot(spec, robot_path)
    for obj in objects.values():
        _add_object(spec, obj)
    lenses = add_cameras(spec, cfg)
    add_lights(spec, cfg, realism)
    model = spec.compile()
    styles = _styles(model, realism, len(cfg.lights))
    return Scene(model, lenses, styles, list(objects))


def _add_realism_materials(spec: mujoco.MjSpec, realism: RealismProfile) -> None:
    tex = spec.add_texture()
    tex.name = 'table_tex'
    tex.type = mujoco.mjtTexture.mjTEXTURE_2D
    tex.builtin = {'checker': mujoco.mjtBuiltin.mjBUILTIN_CHECKER,
                   'gradient': mujoco.mjtBuiltin.mjBUILTIN_GRADIENT,
                   'flat': mujoco.mjtBuiltin.mjBUILTIN_FLAT}[realism.table_texture]
    tex.width = tex.height = 256
    tex.rgb1 = [1.0, 1.0, 1.0]
    tex.rgb2 = realism.table_color2.tolist()
    tex.mark = mujoco.mjtMark.mjMARK_RANDOM
    tex.random = realism.texture_noise
    tex.markrgb = [0.3, 0.25, 0.2]
    mat = spec.add_material()
    mat.name = 'table_mat'
    mat.textures[mujoco.mjtTextureRole.mjTEXROLE_RGB] = 'table_tex'
    mat.texrepeat = [realism.texture_repeat, realism.texture_repeat]
    mat.specular = realism.specular * 0.5
    mat.shininess = 0.3
    shiny = spec.add_material()
    shiny.name = 'shiny_mat'
    shiny.specular = realism.specular
    shiny.shininess = 0.6
    for geom in spec.geoms:
        if geom.name == 'table':
            geom.material = 'table_mat'
        elif geom.type != mujoco.mjtGeom.mjGEOM_PLANE and geom.name not in ('floor',):
            geom.material = 'shiny_mat'


def _styles(model: mujoco.MjModel, realism: RealismProfile | None,
            n_plain_lights: int) -> VisualStyles:
    real = {name: getattr(model, name).copy() for name in
            ('geom_matid', 'geom_rgba', 'light_active', 'light_castshadow', 'light_diffuse')}
    plain = {name: arr.copy() for name, arr in real.items()}
    plain['geom_matid'][:] = -1
    plain['light_castshadow'][:] = 0
    plain['light_active'][n_plain_lights:] = 0
    if realism is not None:
        table_id = model.geom('table').id
        real['geom_rgba'][table_id, :3] = np.clip(real['geom_rgba'][table_id, :3] * 1.25, 0, 1)
        real['light_castshadow'][:] = 1 if realism.shadows else 0
        real['light_diffuse'][:n_plain_lights] = (real['light_diffuse'][:n_plain_lights]
                                                  * realism.light_color)
    return VisualStyles({name: (plain[name], real[name]) for name in real})
