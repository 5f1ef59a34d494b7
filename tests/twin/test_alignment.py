"""Scene alignment against the bench lab's ground truth, from real (bag) episodes.

The bench lab renders its realism-on first frames; they are written with EpisodeBagWriter and
read back by align_episode. Cameras are the bench lab's TRUE calibration (camera_info) until the
calibration stage's TwinCameras are wired in.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
import yaml

from comsim_twin.alignment import AlignmentError, align_episode, load_sheet
from comsim_twin.alignment.cli import main as cli_main
from comsim_twin.alignment.colours import rgb_distance
from comsim_twin.scene import TwinScene
from fixtures.twin_scenes import true_cameras

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location('alignment_accuracy',
                                               ROOT / 'bench' / 'alignment_accuracy.py')
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)

CASES = [('stack_blocks', 'default', 'id', 3), ('stack_blocks', 'green_yellow', 'ood', 1),
         ('move_card', 'default', 'id', 2), ('move_card', 'red', 'ood', 4),
         ('shake_bottle', 'default', 'ood', 2), ('shake_bottle', 'amber', 'id', 5)]


@pytest.fixture(scope='module')
def lab():
    lab = bench.make_lab()
    yield lab
    lab.close()


@pytest.fixture(scope='module')
def cams(lab):
    return true_cameras(lab)


@pytest.fixture(scope='module')
def sheet():
    return load_sheet()


@pytest.fixture(scope='module')
def all_true_colours(lab):
    """Every object colour the bench lab has, over all tasks and variants (name, rgb)."""
    out = []
    for tname, task in lab.config.tasks.items():
        for variant in task.variants:
            for oname, obj in task.objects_for(variant).items():
                out.append((f'{tname}/{variant}/{oname}', np.asarray(obj.color, float)))
    return out


def _episode(lab, tmp_path, task, variant, region, seed, cameras=None):
    lab.reset(task, seed, region, variant)
    path = bench.write_first_frames(lab, tmp_path / f'ep_{task}_{variant}', cameras=cameras)
    return path, lab.task_state()['objects']


@pytest.mark.parametrize('task,variant,region,seed', CASES)
def test_alignment_matches_ground_truth(lab, cams, sheet, all_true_colours, tmp_path,
                                        task, variant, region, seed):
    ep, truth = _episode(lab, tmp_path, task, variant, region, seed)
    target = lab.task_state()['target']
    scene, report = align_episode(ep, cams, sheet, task, variant)
    assert set(scene.objects) == set(truth) == set(report.objects)
    for name, gt in truth.items():
        obj = scene.objects[name]
        err = np.linalg.norm(np.array(obj.pos[:2]) - np.array(gt['pos'][:2]))
        assert err < 0.01, f'{name}: {err * 1000:.1f} mm from the truth'
        assert abs(obj.pos[2] - gt['pos'][2]) < 0.002          # resting on the table
        assert report.objects[name].iou > 0.5
        # colour: nearer the object's own true colour than any differently coloured object's
        own = rgb_distance(obj.color, gt['color'])
        others = [rgb_distance(obj.color, c) for _, c in all_true_colours
                  if rgb_distance(c, gt['color']) > 0.15]
        assert own < min(others), f'{name}: colour {obj.color} vs true {gt["color"]}'
    assert scene.cameras.keys() == cams.keys() and scene.task == task
    if task == 'move_card':       # the zone drawn on the table, aligned like the objects
        zone = scene.markers['target_zone']
        err = np.linalg.norm(np.subtract(zone.pos, target['zone_center']))
        assert err < 0.01, f'target_zone: {err * 1000:.1f} mm from the truth'
        assert zone.size == list(target['zone_half_size'])
        assert abs(zone.yaw - target['zone_yaw']) < 0.05
        assert report.markers['target_zone'].iou > 0.7
    else:
        assert scene.markers == {}
    # the scene round-trips through YAML
    again = TwinScene.load(scene.save(tmp_path / 'scene.yaml'))
    assert again.objects.keys() == scene.objects.keys()


def test_render_and_compare_improves_or_keeps_the_first_estimate(lab, cams, sheet, tmp_path):
    """Refinement raises the silhouette IoU over the back-projected first estimate."""
    from comsim_twin.alignment.align import align_images
    from comsim_twin.alignment.localise import Pose2D, iou
    from comsim_twin.alignment.silhouettes import ProjectedSilhouettes

    lab.reset('stack_blocks', 6, 'id', 'large')
    images = {c: lab.render(c) for c in cams}
    truth = lab.task_state()['objects']
    scene, report = align_images(images, cams, sheet, 'stack_blocks', 'large')
    r = ProjectedSilhouettes()
    obj = sheet.objects('stack_blocks', 'large')['block_bottom']
    rep = report.objects['block_bottom']
    first = Pose2D(*rep.first_estimate)
    # IoU against the TRUE pose's silhouette: the refined pose must be at least as close
    gt = truth['block_bottom']
    gyaw = bench.ground_truth_yaw(gt['quat'])
    def score(p):
        return np.mean([iou(r.mask(c, obj, p.x, p.y, p.yaw),
                            r.mask(c, obj, gt['pos'][0], gt['pos'][1], gyaw))
                        for c in cams.values()])
    refined = Pose2D(rep.position[0], rep.position[1], rep.yaw)
    assert score(refined) >= score(first) - 0.02
    assert score(refined) > 0.8


def test_twin_backend_render_and_compare(lab, cams, sheet, tmp_path):
    """Render-and-compare through the MuJoCo twin's segmentation (backend.render_segmentation)."""
    backends = pytest.importorskip('comsim_twin.backends')
    backend = backends.make_backend('mujoco')
    try:
        ep, truth = _episode(lab, tmp_path, 'stack_blocks', 'default', 'id', 8)
        scene, report = align_episode(ep, cams, sheet, 'stack_blocks', 'default', backend)
    finally:
        backend.close()
    assert report.renderer == 'backend'
    for name, gt in truth.items():
        err = np.linalg.norm(np.array(scene.objects[name].pos[:2]) - np.array(gt['pos'][:2]))
        assert err < 0.01, f'{name}: {err * 1000:.1f} mm'
        assert report.objects[name].iou > 0.7


def test_missing_camera_topic_is_named(lab, cams, sheet, tmp_path):
    ep, _ = _episode(lab, tmp_path, 'stack_blocks', 'default', 'id', 0, cameras=['front'])
    with pytest.raises(AlignmentError, match=r"camera 'side' topic /cameras/side/image_raw"):
        align_episode(ep, cams, sheet, 'stack_blocks')


def test_object_not_in_image_is_named(lab, cams, sheet, tmp_path):
    # the lab shows the green/yellow blocks; the sheet's default variant expects red and blue
    ep, _ = _episode(lab, tmp_path, 'stack_blocks', 'green_yellow', 'id', 0)
    with pytest.raises(AlignmentError, match=r"object 'block_top' \(red box\) not found"):
        align_episode(ep, cams, sheet, 'stack_blocks', 'default')


def test_unknown_task_or_variant(cams, sheet, tmp_path):
    with pytest.raises(AlignmentError, match=r"unknown task 'juggle'.*move_card"):
        align_episode(tmp_path / 'nope', cams, sheet, 'juggle')
    with pytest.raises(AlignmentError, match=r"no variant 'purple'.*cylinders"):
        align_episode(tmp_path / 'nope', cams, sheet, 'stack_blocks', 'purple')


def test_cli_writes_scene_and_report(lab, cams, tmp_path, capsys):
    ep, truth = _episode(lab, tmp_path, 'shake_bottle', 'blue', 'id', 1)
    calib = tmp_path / 'calib'
    calib.mkdir()
    for name, cam in cams.items():
        (calib / f'{name}.yaml').write_text(yaml.safe_dump(cam.to_dict()))
    out = tmp_path / 'twin' / 'twin_scene.yaml'
    rc = cli_main([str(ep), '--calibration', str(calib), '--task', 'shake_bottle',
                   '--variant', 'blue', '--out', str(out)])
    assert rc == 0
    scene = TwinScene.load(out)
    bottle = scene.objects['bottle']
    assert bottle.shape == 'bottle' and len(bottle.size) == 4
    assert np.linalg.norm(np.array(bottle.pos[:2]) - truth['bottle']['pos'][:2]) < 0.01
    report = yaml.safe_load((tmp_path / 'twin' / 'twin_scene_alignment.yaml').read_text())
    assert report['objects']['bottle']['colour_name'] == 'blue'
    assert 'bottle:' in capsys.readouterr().out
    assert cli_main([str(ep), '--calibration', str(tmp_path / 'none'), '--task', 'x',
                     '--out', str(out)]) == 2
