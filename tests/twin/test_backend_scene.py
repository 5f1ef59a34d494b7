"""Twin scene YAML round-trip, and the hidden-parameter rule: comsim_twin never reads the lab."""
import ast
from pathlib import Path

import numpy as np
import pytest

from comsim_twin.scene import SceneError, TableTexture, TwinCamera, TwinObject, TwinScene

ROOT = Path(__file__).resolve().parents[2]
TWIN_SRC = ROOT / 'src/comsim_twin'


def _scene() -> TwinScene:
    T = np.eye(4)
    T[:3, 3] = [1.0, 0.1, 0.6]
    K = np.array([[290.5, 0.0, 160.25], [0.0, 291.0, 119.75], [0.0, 0.0, 1.0]])
    cam = TwinCamera('front', 320, 240, K, np.array([-0.11, 0.08, 0.001, -0.0004, -0.02]), T,
                     '/cameras/front/image_raw')
    return TwinScene(table_size=[0.6, 0.5], table_center=[0.35, 0.0], cameras={'front': cam},
                     objects={'bottle': TwinObject('bottle', 'bottle', [0.03, 0.05, 0.012, 0.015],
                                                   [0.2, 0.55, 0.3], [0.4, 0.05, 0.05],
                                                   [0.9, 0.0, 0.0, 0.43589], 0.15, 0.8)},
                     task='shake_bottle', provenance={'cameras': 'calibration run 3'})


def test_yaml_round_trip(tmp_path):
    scene = _scene()
    loaded = TwinScene.load(scene.save(tmp_path / 'twin' / 'scene.yaml'))
    assert loaded.to_dict() == scene.to_dict()
    cam = loaded.cameras['front']
    np.testing.assert_array_equal(cam.K, scene.cameras['front'].K)
    np.testing.assert_array_equal(cam.T_base_camera, scene.cameras['front'].T_base_camera)
    assert loaded.objects['bottle'].size == [0.03, 0.05, 0.012, 0.015]


def test_round_tripped_scene_builds_and_renders_the_same(tmp_path):
    from comsim_twin.backends import make_backend
    scene = _scene()
    loaded = TwinScene.load(scene.save(tmp_path / 'scene.yaml'))
    images = []
    for s in (scene, loaded):
        twin = make_backend('mujoco')
        try:
            twin.build(s)
            images.append(twin.render('front'))
        finally:
            twin.close()
    np.testing.assert_array_equal(images[0], images[1])


@pytest.mark.parametrize('edit,message', [
    (lambda d: d.pop('table'), "missing key 'table'"),
    (lambda d: d['cameras']['front'].update(D=[0.1]), 'cameras.front.D: expected a list of 5'),
    (lambda d: d['objects']['bottle'].update(shape='torus'), 'torus'),
    (lambda d: d.update(format='other/1'), 'format'),
])
def test_bad_scene_is_named(edit, message):
    data = _scene().to_dict()
    edit(data)
    with pytest.raises(SceneError, match=message):
        TwinScene.from_dict(data, 'scene.yaml')


def _imports(tree: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif (isinstance(node, ast.Call) and getattr(node.func, 'attr', '') == 'import_module'
              and node.args and isinstance(node.args[0], ast.Constant)):
            names.add(str(node.args[0].value))
    return names


def test_twin_never_imports_the_bench_lab():
    files = sorted(TWIN_SRC.rglob('*.py'))
    assert len(files) >= 5   # the scan really sees the package (scene, backends, ...)
    offenders = []
    for path in files:
        tree = ast.parse(path.read_text(), str(path))
        if any(n.split('.')[0] == 'comsim_bench_lab' for n in _imports(tree)):
            offenders.append(str(path.relative_to(ROOT)))
        for node in ast.walk(tree):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                    and 'config/bench_lab' in node.value and not _is_docstring(tree, node)):
                offenders.append(f'{path.relative_to(ROOT)}: reads {node.value!r}')
    assert not offenders, f'comsim_twin must not use the bench lab: {offenders}'


def _is_docstring(tree: ast.AST, const: ast.Constant) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            if ast.get_docstring(node, clean=False) is not None and node.body[0].value is const:
                return True
    return False


def test_import_scan_catches_an_offender():
    tree = ast.parse('import os\nfrom comsim_bench_lab.lab import BenchLab\n')
    assert 'comsim_bench_lab.lab' in _imports(tree)


def _top_scene(texture: TableTexture | None = None) -> TwinScene:
    """_scene() with the camera 1 m above the table looking straight down, so it sees the top."""
    scene = _scene()
    T = np.eye(4)
    T[:3, :3] = np.diag([1.0, -1.0, -1.0])          # optical z (forward) = world -z
    T[:3, 3] = [0.35, 0.0, 1.0]
    scene.cameras['front'].T_base_camera = T
    scene.table_texture = texture
    return scene


def _render(scene: TwinScene) -> np.ndarray:
    from comsim_twin.backends import make_backend
    twin = make_backend('mujoco')
    try:
        twin.build(scene)
        textured = scene.table_texture is not None and scene.table_texture.kind != 'none'
        assert (twin.model.geom('table').matid[0] >= 0) == textured   # flat: no material at all
        return twin.render('front')
    finally:
        twin.close()


def test_table_texture_round_trips_and_absent_stays_absent(tmp_path):
    scene = _scene()
    assert 'texture' not in scene.to_dict()['table']              # old scenes: unchanged YAML
    scene.table_texture = TableTexture('stripes', [0.1, 0.2, 0.3], 0.03)
    loaded = TwinScene.load(scene.save(tmp_path / 'scene.yaml'))
    assert loaded.table_texture == scene.table_texture
    assert loaded.to_dict() == scene.to_dict()


def test_textured_table_renders_differ_and_none_is_flat():
    flat = _render(_top_scene())
    assert flat.std() > 5                                            # it sees the table
    images = {}
    for kind in ('checker', 'noise', 'stripes'):
        scene = _top_scene(TableTexture(kind, [0.15, 0.1, 0.05], 0.04))
        images[kind] = _render(scene)
        assert np.abs(images[kind].astype(int) - flat).mean() > 3, kind
        np.testing.assert_array_equal(images[kind], _render(scene))   # deterministic (noise too)
    assert not np.array_equal(images['checker'], images['stripes'])
    none = _top_scene(TableTexture('none', [0.15, 0.1, 0.05], 0.04))
    np.testing.assert_array_equal(_render(none), flat)             # 'none' is the flat table


@pytest.mark.parametrize('texture,message', [
    ({'kind': 'plaid'}, 'plaid'),
    ({'color2': [0.1, 0.2, 0.3]}, "missing key 'kind'"),
    ({'kind': 'checker', 'color2': [0.1, 0.2]}, 'color2'),
    ({'kind': 'checker', 'color2': [0.1, 0.2, 1.5]}, 'color2'),
    ({'kind': 'checker', 'scale': 0}, 'scale'),
    ({'kind': 'checker', 'scale': 'big'}, 'scale'),
    ({'kind': 'checker', 'colour2': [0.1, 0.2, 0.3]}, r'unknown key\(s\) colour2'),
    ('checker', 'expected a mapping'),
])
def test_bad_table_texture_is_named(texture, message):
    data = _scene().to_dict()
    data['table']['texture'] = texture
    with pytest.raises(SceneError, match=message):
        TwinScene.from_dict(data, 'scene.yaml')
