"""The base twin scene generation starts from (fixtures/twin_scenes.py) survives YAML."""
from __future__ import annotations

from comsim_twin.scene import TwinScene
from fixtures.twin_scenes import base_scene


def test_base_scene_round_trips_through_yaml(tmp_path):
    """The CLI reads the base scene from YAML: what generation gets must survive the trip."""
    scene = base_scene('shake_bottle')
    again = TwinScene.load(scene.save(tmp_path / 'scene.yaml'))
    assert again.objects['bottle'].size == scene.objects['bottle'].size
    assert len(again.objects['bottle'].size) == 4                      # body + neck
    for name, cam in scene.cameras.items():
        assert (again.cameras[name].K == cam.K).all()
        assert abs(again.cameras[name].T_base_camera - cam.T_base_camera).max() < 1e-12
