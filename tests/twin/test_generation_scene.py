"""Base twin scene for generation tests: the bench lab's TRUE cameras + the object sheet.

Tests may read ground truth; the twin code never does (it gets a calibrated scene instead).
"""
from __future__ import annotations

from pathlib import Path

from comsim_bench_lab.cameras import calibration_of
from comsim_bench_lab.config import LabConfig
from comsim_twin.alignment.sheet import load_sheet
from comsim_twin.scene import TwinCamera, TwinObject, TwinScene

ROOT = Path(__file__).resolve().parents[2]


def base_scene(task: str, variant: str | None = None) -> TwinScene:
    lab = LabConfig.load(ROOT / 'config/bench_lab/lab.yaml')
    cams = {}
    for name, cfg in lab.cameras.items():
        c = calibration_of(cfg)
        cams[name] = TwinCamera(name, c.width, c.height, c.K, c.D, c.T_base_camera,
                                f'/cameras/{name}/image_raw')
    sheet = load_sheet(ROOT / 'config/twin/objects.yaml')
    objects = {}
    for name, o in sheet.objects(task, variant).items():
        size = list(o.size) + (list(o.neck) if o.neck else [])
        objects[name] = TwinObject(name, o.shape, [float(v) for v in size],
                                   list(o.reference_rgb), [0.4, 0.0, o.half_height])
    return TwinScene(table_size=list(sheet.table_half_size),
                     table_center=list(sheet.table_center),
                     table_color=list(sheet.colours.get(sheet.table_colour, (0.6, 0.5, 0.4))),
                     cameras=cams, objects=objects, task=task,
                     provenance={'cameras': 'bench lab ground truth (test only)'})


def test_base_scene_round_trips_through_yaml(tmp_path):
    """The CLI reads the base scene from YAML: what generation gets must survive the trip."""
    scene = base_scene('shake_bottle')
    again = TwinScene.load(scene.save(tmp_path / 'scene.yaml'))
    assert again.objects['bottle'].size == scene.objects['bottle'].size
    assert len(again.objects['bottle'].size) == 4                      # body + neck
    for name, cam in scene.cameras.items():
        assert (again.cameras[name].K == cam.K).all()
        assert abs(again.cameras[name].T_base_camera - cam.T_base_camera).max() < 1e-12
