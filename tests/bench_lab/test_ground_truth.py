"""Bench-lab ground truth of generated episodes: same stamps, same layout, a held grasp, a
paired episode the neural simulator reads unchanged, typed metadata whose success is the lab's
own check, filming at a rate without positions, resumable parallel CLI, clear errors."""
import copy
import os
import shutil
from pathlib import Path

import cv2
import numpy as np
import pytest
import yaml

os.environ.setdefault('MUJOCO_GL', 'egl')
from comsim_bench_lab.config import LabConfig
from comsim_bench_lab.ground_truth import (
    CameraMismatchError,
    GroundTruthRenderer,
    MissingStreamError,
    NotGeneratedError,
    kept_frames,
    lab_config_for,
    lab_objects,
    main,
    select_frames,
)
from comsim_core.episodes import Episode, read_meta
from comsim_core.episodes.sidecar import counts_as_success, read_sidecar
from comsim_core.robot.model import RobotModel
from comsim_twin.generation.config import GenerationConfig
from comsim_twin.generation.runner import generate
from comsim_twin.generation.writer import GeneratedEpisodeWriter
from comsim_twin.scene import TwinCamera
from fixtures.twin_scenes import base_scene

ROOT = Path(__file__).resolve().parents[2]
LAB_YAML = ROOT / 'config' / 'bench_lab' / 'lab.yaml'
REALISM_YAML = ROOT / 'config' / 'bench_lab' / 'realism.yaml'
FRAMES = 8


@pytest.fixture(scope='module')
def lab_config():
    return LabConfig.load(LAB_YAML)


@pytest.fixture(scope='module')
def renderer(lab_config):
    with GroundTruthRenderer(lab_config, REALISM_YAML) as r:
        yield r


@pytest.fixture(scope='module')
def generated(tmp_path_factory):
    """One stack_blocks episode from the twin: half-size cameras, 10 Hz, no distractors (so a
    colour mask finds exactly the two blocks). The layout is the task rule's own draw for seed
    11 (`coverage: layout`): the controls below (a 4 cm move that fails the stack, blocks
    large enough to find) were sized on it."""
    cfg = GenerationConfig.load()
    rnd = copy.deepcopy(cfg.randomise)
    rnd['distractors'] = {**(rnd.get('distractors') or {}), 'count': [0, 0]}
    cfg = cfg.with_overrides(image_scale=0.5, camera_hz=10.0, settle_s=0.2, randomise=rnd,
                             coverage='layout')
    out = tmp_path_factory.mktemp('gen')
    rep = generate(base_scene('stack_blocks'), 'stack_blocks', 1, out, seed=11, workers=1,
                   config=cfg, progress=False)
    assert rep.successes == 1, rep.episodes
    return out / rep.episodes[0].name


@pytest.fixture(scope='module')
def truth(generated, renderer, tmp_path_factory):
    out = tmp_path_factory.mktemp('truth')
    res = renderer.render(generated, out, max_frames=FRAMES)
    return res


def _stream(path: Path, topic: str) -> tuple[list[int], np.ndarray]:
    with Episode.open(path) as ep:
        pairs = list(ep.images(topic))
    return [t for t, _ in pairs], np.stack([f for _, f in pairs])


def _centroid(img: np.ndarray, colour: str) -> np.ndarray:
    """Pixel centroid (x, y) of the red or the blue block: the largest blob of that colour
    (texture marks and sensor noise leave a few stray pixels)."""
    x = img.astype(int)
    r, g, b = x[..., 0], x[..., 1], x[..., 2]
    mask = (r - np.maximum(g, b) > 60) if colour == 'red' else (b - np.maximum(r, g) > 50)
    n, _, stats, centres = cv2.connectedComponentsWithStats(mask.astype(np.uint8))
    assert n > 1, f'no {colour} block in the image'
    best = 1 + int(np.argmax(stats[1:, cv2.CC_STAT_AREA]))
    assert stats[best, cv2.CC_STAT_AREA] >= 20, f'no {colour} block in the image'
    return centres[best]


def test_stamps_are_the_sim_frame_stamps(generated, truth):
    assert not truth.skipped and set(truth.frames) == {'front', 'side'}
    for cam in ('front', 'side'):
        sim_t, sim = _stream(generated, f'/cameras/{cam}/image_raw')
        real_t, real = _stream(truth.path, f'/real/cameras/{cam}/image_raw')
        pair_sim_t, pair_sim = _stream(truth.path, f'/sim/cameras/{cam}/image_raw')
        picked = [sim_t[i] for i in select_frames(len(sim_t), FRAMES)]
        assert real_t == picked == pair_sim_t and len(picked) == FRAMES
        assert picked[0] == sim_t[0] and picked[-1] == sim_t[-1]     # spread over the episode
        assert real.shape == pair_sim.shape == (FRAMES, *sim.shape[1:])   # 160x120, rescaled
        for k, t in enumerate(pair_sim_t):                            # sim frames copied as is
            assert np.array_equal(pair_sim[k], sim[sim_t.index(t)])
        # the realism profile really rendered: far from the twin's flat look
        assert np.abs(real.astype(int) - pair_sim.astype(int)).mean() > 15


def test_objects_where_the_sim_has_them_and_the_grasp_holds(generated, truth):
    _, real = _stream(truth.path, '/real/cameras/front/image_raw')
    _, sim = _stream(truth.path, '/sim/cameras/front/image_raw')
    for k in range(len(real)):        # start layout, the carry, the stack
        for colour in ('red', 'blue'):
            err = np.linalg.norm(_centroid(real[k], colour) - _centroid(sim[k], colour))
            assert err < 2.5, (k, colour, err)
    side = yaml.safe_load((truth.path / 'episode.yaml').read_text())
    assert side['ground_truth'] == 'bench_lab' and side['mode'] == 'kinematic'
    assert side['bench_success'] is True, side['bench_success_reason']
    assert max(side['object_drift_m'].values()) < 0.01


def test_typed_metadata_and_the_labs_verdict_as_success(generated, truth):
    """source gt, the sim episode's task, seed and region; success is the bench lab's check,
    so a reader of any episode (counts_as_success) trusts the lab, not the twin."""
    meta, sim = read_meta(truth.path), read_meta(generated)
    assert meta.source == 'gt' and meta.task == 'stack_blocks' == sim.task
    assert meta.seed == sim.seed is not None and meta.region == sim.region == 'id'
    side = read_sidecar(truth.path)
    assert side['success'] is side['bench_success'] is True and counts_as_success(side)


def test_a_moved_block_shows_where_it_was_moved(generated, renderer, tmp_path):
    """Control: the centroid check above sees a 4 cm layout change."""
    moved = tmp_path / 'moved' / generated.name
    shutil.copytree(generated, moved)
    side = yaml.safe_load((moved / 'episode.yaml').read_text())
    side['metadata']['randomisation']['objects']['block_top']['pos'][1] += 0.04
    (moved / 'episode.yaml').write_text(yaml.safe_dump(side))
    res = renderer.render(moved, tmp_path / 'out', cameras=['front'], max_frames=2)
    _, real = _stream(res.path, '/real/cameras/front/image_raw')
    _, sim = _stream(res.path, '/sim/cameras/front/image_raw')
    assert np.linalg.norm(_centroid(real[0], 'red') - _centroid(sim[0], 'red')) > 5
    assert np.linalg.norm(_centroid(real[0], 'blue') - _centroid(sim[0], 'blue')) < 2.5
    # the sim's grasp closes where the block is not: the lab's check fails, and so does success
    side = read_sidecar(res.path)
    assert side['bench_success'] is False and side['success'] is False
    assert read_sidecar(moved)['success'] is True and not counts_as_success(side)


def test_kept_frames_at_a_rate_then_at_most_max_frames():
    stamps = [10**9 + k * 33_333_333 for k in range(91)]          # 30 Hz, 3 s
    assert kept_frames(stamps, None, None).tolist() == list(range(91))
    assert kept_frames(stamps, 10.0, None).tolist() == list(range(0, 91, 3))
    assert kept_frames(stamps, 30.0, None).tolist() == list(range(91))
    assert kept_frames(stamps, 100.0, None).tolist() == list(range(91))   # never more than all
    assert kept_frames(stamps, 10.0, 4).tolist() == [0, 30, 60, 90]
    assert kept_frames(stamps[:1], 10.0, None).tolist() == [0]


def test_filming_at_a_rate_without_positions(generated, truth, renderer, tmp_path):
    """The 10 Hz sim episode filmed at 5 Hz: every second frame, the same pictures as filming
    all of them at those stamps, no positions.json."""
    res = renderer.render(generated, tmp_path, cameras=['front'], rate_hz=5.0, positions=False)
    sim_t, _ = _stream(generated, '/cameras/front/image_raw')
    real_t, real = _stream(res.path, '/real/cameras/front/image_raw')
    assert real_t == sim_t[::2] and res.frames == {'front': len(sim_t[::2])}
    assert not (res.path / 'positions.json').exists()
    side = read_sidecar(res.path)
    assert side['positions'] is None and side['rate_hz'] == 5.0 and side['success'] is True
    full_t, full = _stream(truth.path, '/real/cameras/front/image_raw')
    common = sorted(set(full_t) & set(real_t))     # the max_frames picks filmed both times
    assert len(common) >= 2
    for t in common:                               # the same scene (sensor noise may differ)
        a, b = full[full_t.index(t)], real[real_t.index(t)]
        for colour in ('red', 'blue'):
            assert np.linalg.norm(_centroid(a, colour) - _centroid(b, colour)) < 1.0, t


def test_filming_at_the_bench_cameras_native_size(generated, truth, renderer, tmp_path):
    """A half-size sim episode filmed at the bench camera's own 320x240: the lab renders the
    same view at twice the pixels (block centroids at twice the half-size ones), the sim frames
    are resized to match so the pair stays aligned, and the sidecar names both sizes."""
    res = renderer.render(generated, tmp_path, cameras=['front'], max_frames=FRAMES,
                          native_size=True)
    real_t, real = _stream(res.path, '/real/cameras/front/image_raw')
    pair_t, pair_sim = _stream(res.path, '/sim/cameras/front/image_raw')
    half_t, half = _stream(truth.path, '/real/cameras/front/image_raw')
    assert real_t == pair_t == half_t
    assert real.shape[1:] == pair_sim.shape[1:] == (240, 320, 3) and half.shape[1:3] == (120, 160)
    side = read_sidecar(res.path)
    assert side['image_size'] == {'front': [320, 240]}
    assert side['sim_image_size'] == {'front': [160, 120]}
    for k in (0, len(real) - 1):
        for colour in ('red', 'blue'):
            full = _centroid(real[k], colour)
            assert np.linalg.norm(full - _centroid(pair_sim[k], colour)) < 5.0, (k, colour)
            # pixel centres: x_full + 0.5 = 2 (x_half + 0.5)
            assert np.linalg.norm(full + 0.5 - 2 * (_centroid(half[k], colour) + 0.5)) < 4.0


def test_the_neural_simulator_reads_it_unchanged(truth):
    from comsim_neural_sim.data.clips import load_paired_episode
    clip = load_paired_episode(truth.path, 'front')
    assert len(clip.real) == FRAMES and clip.actions.shape == (FRAMES, 7)


def test_cli_is_resumable_and_names_bad_inputs(generated, truth, tmp_path, capsys):
    out = truth.path.parent
    assert main([str(generated), '--out', str(out), '--max-frames', str(FRAMES)]) == 0
    printed = capsys.readouterr().out
    assert 'skip' in printed and '1 of 1 pass the bench lab' in printed
    not_generated = tmp_path / 'recorded' / generated.name
    shutil.copytree(generated, not_generated)
    side = yaml.safe_load((not_generated / 'episode.yaml').read_text())
    del side['metadata']['randomisation']
    (not_generated / 'episode.yaml').write_text(yaml.safe_dump(side))
    assert main([str(not_generated), str(tmp_path / 'nothing_here'), '--out',
                 str(tmp_path / 'o')]) == 2
    err = capsys.readouterr().err
    assert 'not an episode generated by the twin' in err and 'nothing_here' in err


def test_cli_films_in_parallel_workers(generated, tmp_path, capsys):
    """Two workers, two episodes: each filmed once, at the rate asked, counted in the tally;
    a rerun finds both done."""
    sims = tmp_path / 'sims'
    shutil.copytree(generated, sims / 'a' / generated.name)
    shutil.copytree(generated, sims / 'b' / 'other')
    out = tmp_path / 'out'
    argv = [str(sims), '--out', str(out), '--workers', '2', '--rate-hz', '5', '--no-positions',
            '--cameras', 'front']
    assert main(argv) == 0
    assert '2 filmed, 0 already on disk, 0 failed; 2 of 2 pass' in capsys.readouterr().out
    sim_t, _ = _stream(generated, '/cameras/front/image_raw')
    for name in (generated.name, 'other'):
        assert read_sidecar(out / name)['frames'] == {'front': len(sim_t[::2])}
    assert main(argv) == 0 and '0 filmed, 2 already on disk' in capsys.readouterr().out


def _fake_generated(out: Path, source: Path, cams: dict[str, tuple[int, int]],
                    joints: bool = True) -> Path:
    """A 3-frame episode in the generator's format with ``source``'s layout metadata."""
    meta = yaml.safe_load((source / 'episode.yaml').read_text())['metadata']
    robot = RobotModel.load(None)
    cameras = {c: TwinCamera(c, w, h, np.eye(3), np.zeros(5), np.eye(4), f'/cameras/{c}/image_raw')
               for c, (w, h) in cams.items()}
    wr = GeneratedEpisodeWriter(out, source.name, cameras, robot.joint_names, (100, 10, 50))
    for k in range(3):
        t = 10**9 + k * 10**8
        if joints:
            wr.joint_state(t, robot.home, np.zeros(len(robot.home)))
        wr.command(t, robot.home, 0.0)
        for c, (w, h) in cams.items():
            wr.image(t, c, np.zeros((h, w, 3), np.uint8))
    return wr.finish(meta, True)


def test_bad_inputs_raise_clear_errors(generated, renderer, tmp_path):
    bad = _fake_generated(tmp_path / 'aspect', generated, {'front': (100, 40)})
    with pytest.raises(CameraMismatchError, match=r'100x40.*not a scaled copy'):
        renderer.render(bad, tmp_path / 'o')
    bad = _fake_generated(tmp_path / 'top', generated, {'top': (80, 60)})
    with pytest.raises(CameraMismatchError, match=r"\['top'\] are not bench-lab cameras"):
        renderer.render(bad, tmp_path / 'o')
    bad = _fake_generated(tmp_path / 'nojs', generated, {'front': (80, 60)}, joints=False)
    with pytest.raises(MissingStreamError, match='/joint_states'):
        renderer.render(bad, tmp_path / 'o')
    with pytest.raises(CameraMismatchError, match=r"no camera \['left'\]"):
        renderer.render(generated, tmp_path / 'o', cameras=['left'])
    translated = tmp_path / 'pseudo' / generated.name
    shutil.copytree(generated, translated)
    side = yaml.safe_load((translated / 'episode.yaml').read_text())
    side['metadata']['source'] = 'pseudo_real'
    (translated / 'episode.yaml').write_text(yaml.safe_dump(side))
    with pytest.raises(NotGeneratedError, match='translated'):
        renderer.render(translated, tmp_path / 'o')
    with pytest.raises(NotGeneratedError, match='no metadata.yaml'):
        renderer.render(tmp_path, tmp_path / 'o')


def test_layout_conversion_and_camera_rescale(lab_config):
    layout = {'bottle': {'shape': 'bottle', 'size': [0.03, 0.05], 'color': [0.1, 0.5, 0.2],
                         'pos': [0.4, 0.0, 0.05], 'quat': [1, 0, 0, 0]},
              'distractor_0': {'shape': 'box', 'size': [0.01, 0.02, 0.01],
                               'color': [0.5, 0.5, 0.5], 'pos': [0.3, 0.2, 0.01],
                               'quat': [1, 0, 0, 0]}}
    real = lab_config.tasks['shake_bottle'].objects
    objs, poses = lab_objects(layout, real, 'test')
    assert objs['bottle'].shape == 'cylinder'
    assert np.allclose(objs['bottle'].neck, real['bottle'].neck)     # the real bottle's neck
    assert objs['bottle'].mass == real['bottle'].mass and objs['distractor_0'].mass == 0.05
    assert poses['distractor_0'][0] == [0.3, 0.2, 0.01]
    with pytest.raises(NotGeneratedError, match="shape 'cone'"):
        lab_objects({'x': {**layout['bottle'], 'shape': 'cone'}}, real, 'test')
    half = lab_config_for(lab_config, {'front': (160, 120)})
    cam, full = half.cameras['front'], lab_config.cameras['front']
    assert list(half.cameras) == ['front'] and (cam.width, cam.height) == (160, 120)
    assert cam.fx == pytest.approx(full.fx / 2) and cam.cx == pytest.approx((full.cx + 0.5) / 2
                                                                            - 0.5)


def test_positions_are_where_the_objects_are(truth):
    """positions.json: every rendered frame; the projected centres and visible-pixel centroids
    sit on the blocks found by colour in the ground-truth frame, and the neural simulator's
    tracker finds them there too (its colour model comes from the same file)."""
    from comsim_neural_sim.evaluation.positions import find_object, load_positions
    pos = load_positions(truth.path)
    side = yaml.safe_load((truth.path / 'episode.yaml').read_text())
    assert side['positions'] == 'positions.json' and pos['distortion'] is True
    names = {'red': 'block_top', 'blue': 'block_bottom'}
    for cam in ('front', 'side'):
        stamps, real = _stream(truth.path, f'/real/cameras/{cam}/image_raw')
        frames = pos['cameras'][cam]['frames']
        assert sorted(map(int, frames)) == stamps
        for t, img in zip(stamps, real):
            entry = frames[str(t)]
            assert set(entry['objects']) == set(names.values())
            for colour, name in names.items():
                o = entry['objects'][name]
                assert o['in_image'] and o['pixels'] > 20 and len(o['color_samples']) > 4
                blob = _centroid(img, colour)
                assert np.linalg.norm(blob - o['centroid']) < 2.0, (cam, t, name, blob, o)
                x0, y0, x1, y1 = o['box']
                assert x0 < o['uv'][0] < x1 and y0 < o['uv'][1] < y1
                if t == stamps[0]:      # not yet occluded: the projected centre is the blob's
                    assert np.linalg.norm(blob - o['uv']) < 1.5, (cam, name, blob, o['uv'])
                found = find_object(img, o)
                assert found is not None and np.linalg.norm(found - o['centroid']) < 2.0
                moved = find_object(np.roll(img, 3, axis=0), o)     # 3 px down: 3 px off
                assert moved is not None and abs(moved[1] - found[1] - 3) < 1.0
            g = entry['gripper']                      # recorded, not tracked (dark grey)
            x0, y0, x1, y1 = g['box']
            assert x0 < g['uv'][0] < x1 and y0 < g['uv'][1] < y1 and g['color'] is not None
    # the colour of the lab's red block, not the twin's: the realism profile changes it
    o = frames[str(stamps[0])]['objects']['block_top']
    assert o['color'][0] > 2 * o['color'][1] and o['sim_color'] != o['color']
