"""The main job's report: every stage's result rendered as a markdown section, with pictures.

Stages return numbers, rows and picture paths; only this module writes prose, so a stage's
wording can change without touching its package, and the links are relative to the report's
folder ``out`` (the report moves with its run).
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from comsim_core.report.episodes import contact_sheet
from comsim_core.report.images import save_png
from comsim_core.statistics import wilson_interval

if TYPE_CHECKING:   # the stages pull in torch and MuJoCo: imported where a section needs them
    from comsim_bench_lab.scoring import TwinScores
    from comsim_neural_sim.stage import GeneratedScore, NeuralSimStageResult
    from comsim_policy.stage import PolicyStageResult, TrainedPolicy
    from comsim_teleop.report.recording import RecordingSummary
    from comsim_twin.stage import TwinStageResult


def link(path: Path, out: Path) -> str:
    """A picture's path relative to the report's folder."""
    return Path(path).relative_to(out).as_posix()


# --- recording ----------------------------------------------------------------------------


def success_table(outcomes: list[tuple[str, bool]]) -> str:
    """Recording success per task, k/N with its Wilson 95 % interval."""
    lines = ['| task | successful | rate | 95 % interval (Wilson) |', '|---|---|---|---|']
    for task in dict.fromkeys(t for t, _ in outcomes):
        ok = [s for t, s in outcomes if t == task]
        k, n = sum(ok), len(ok)
        lo, hi = wilson_interval(k, n)
        lines.append(f'| {task} | {k}/{n} | {100 * k / n:.0f} % '
                     f'| {100 * lo:.0f}–{100 * hi:.0f} % |')
    return '\n'.join(lines)


def recording_section(summary: RecordingSummary, out: Path, cameras: list[str],
                      outcomes: list[tuple[str, bool]], wall_s: float,
                      frames_per_sheet: int = 6) -> str:
    """The recording stage: outcomes per task, per-episode and per-topic numbers, and one
    contact sheet per episode (written under ``out/pictures``)."""
    ok = sum(s for _, s in outcomes)
    lines = ['## Recording', '', f'Wall time {wall_s:.0f} s; {ok}/{len(outcomes)} episodes '
             'successful.', '', success_table(outcomes), '',
             f'{len(summary.episodes)} episodes recorded by the scripted expert on the bench lab '
             f'(`{summary.episodes_dir}`). Rates are achieved / expected Hz over each episode; '
             'drops are messages lost in the recorder queue plus those missing from gaps in a '
             'stream.', '',
             '| episode | task | success | status | duration (s) | size (MB) | drops | '
             'lowest rate vs expected |',
             '|---|---|---|---|---|---|---|---|']
    for e in summary.episodes:
        low = 'n/a' if e.lowest_rate is None else f'{e.lowest_rate * 100:.0f} %'
        lines.append(f'| {e.path.name} | {e.task or "?"} | {e.success} | {e.status} | '
                     f'{e.duration_s:.1f} | {e.size_mb:.1f} | {e.drops} | {low} |')
    lines += ['', '### Per topic, over all episodes', '',
              '| topic | messages | mean rate (Hz) | expected (Hz) | lowest episode rate | '
              'queue drops | missed (gaps) | max gap (s) |', '|---|---|---|---|---|---|---|---|']
    for t in summary.topics:
        lines.append(f'| `{t.topic}` | {t.messages} | {t.mean_rate_hz:.2f} | '
                     f'{t.expected_rate_hz or "-"} | {t.lowest_rate_hz:.2f} | {t.queue_drops} | '
                     f'{t.missed} | {t.max_gap_s:.3f} |')
    lines += ['', '### Contact sheets', '']
    for e in summary.episodes:
        try:
            sheet = contact_sheet(e.path, cameras, frames_per_sheet)
        except Exception as exc:  # one unreadable episode must not sink the report
            lines.append(f'- {e.path.name}: no contact sheet ({exc})')
            continue
        png = save_png(out / 'pictures' / f'{e.path.name}.png', sheet)
        lines += [f'**{e.path.name}** ({e.task}, success={e.success})', '',
                  f'![{e.path.name}]({link(png, out)})', '']
    return '\n'.join(lines)


def reused_recording_section(episodes: Path) -> str:
    return f'## Recording\n\nReused the episodes in `{episodes}`.'


# --- digital twin -------------------------------------------------------------------------


def twin_section(res: TwinStageResult, scores: TwinScores, out: Path, capture_s: float,
                 calib_views: int) -> str:
    """Calibration and alignment against the bench lab's truth, replay gaps with one real |
    twin | difference picture per task (under ``out/pictures``), rule-based generation."""
    from comsim_twin.replay import side_by_side  # noqa: PLC0415
    lines = ['## Digital twin', '',
             f'Calibration capture {capture_s:.0f} s ({calib_views} board views per camera '
             f'+ table placements), calibration {res.seconds["calibration"]:.0f} s, alignment '
             f'{res.seconds["alignment"]:.0f} s, replay {res.seconds["replay"]:.0f} s, '
             f'generation {res.seconds["generation"]:.0f} s. Errors are against the bench '
             "lab's hidden ground truth, which the twin never reads.", '',
             '### Calibration', '',
             '| camera | views used / rejected | mean reprojection (px) | fx, fy error (px) | '
             'cx, cy error (px) | extrinsic error (mm) | (deg) |', '|---|---|---|---|---|---|---|']
    for s in scores.cameras:
        intr = res.calibration[s.camera]['intrinsics']
        lines.append(f'| {s.camera} | {len(intr["used_views"])} / '
                     f'{len(intr["rejected_views"])} | {intr["mean_error_px"]:.3f} | '
                     f'{s.fx_px:+.2f}, {s.fy_px:+.2f} | {s.cx_px:+.2f}, {s.cy_px:+.2f} | '
                     f'{s.position_mm:.2f} | {s.rotation_deg:.3f} |')
    lines += ['', 'Targets: < 0.5 px, < 5 mm, < 0.5°.', '', '### Alignment', '',
              '| episode | object | position error (mm) | yaw error (deg) | IoU | colour (twin) |',
              '|---|---|---|---|---|---|']
    for s in scores.objects:
        if not s.in_layout:
            lines.append(f'| {s.episode} | {s.object} | (not in the bench layout) | | | |')
            continue
        o = res.alignment[s.episode]['objects'][s.object]
        yaw = '–' if s.yaw_deg is None else f'{s.yaw_deg:+.1f}'
        rgb = ', '.join(f'{c:.2f}' for c in o['colour'])
        lines.append(f'| {s.episode} | {s.object} | {s.position_mm:.1f} | {yaw} | '
                     f'{o["iou"]:.2f} | {rgb} |')
    errors = scores.position_errors_mm()
    if errors:
        lines += ['', f'Position error over {len(errors)} objects: mean {np.mean(errors):.1f} '
                  f'mm, max {np.max(errors):.1f} mm (target < 10 mm; box yaw modulo 90°, round '
                  'objects have none).']
    lines += ['', '### Replay: real vs twin (same states)', '',
              '| episode | frames | PSNR mean (dB) | PSNR min | SSIM mean | SSIM min |',
              '|---|---|---|---|---|---|']
    for name, gap in res.gaps.items():
        cams = list(gap['cameras'].values())
        lines.append(f'| {name} | {sum(c["frames"] for c in cams)} | {gap["psnr_mean"]:.2f} | '
                     f'{min(c["psnr_min"] for c in cams):.2f} | {gap["ssim_mean"]:.3f} | '
                     f'{min(c["ssim_min"] for c in cams):.3f} |')
    shown = set()
    for name, paired in res.paired.items():
        task = name.split('_', 2)[-1]
        if task in shown:
            continue
        shown.add(task)
        png = save_png(out / 'pictures' / f'twin_{name}.png', side_by_side(paired, 3))
        lines += ['', f'**{name}**: real | twin | difference', '', f'![{name}]({link(png, out)})']
    lines += ['', '### Rule-based generation', '', '| task | made | successful | wall (s) |',
              '|---|---|---|---|']
    for task, g in res.generation.items():
        lines.append(f'| {task} | {g["made"]} | {g["successes"]} | {g["wall_s"]:.0f} |')
    return '\n'.join(lines)


# --- neural simulator ---------------------------------------------------------------------


def generated_section(gen: GeneratedScore, out: Path) -> str:
    """Translated generated episodes scored against the bench lab's renders (or why not)."""
    from comsim_neural_sim.evaluation.generated import markdown_table  # noqa: PLC0415
    title = '### Translated generated episodes vs bench-lab ground truth\n\n'
    if gen.result is None:
        return f'{title}Not available: {gen.error}\n'
    grid = gen.result.grid
    return (f'{title}The bench lab filmed each generated layout and trajectory (kinematic replay, '
            f'hidden realism on) at the sim frame stamps: ground truth that recorded episodes '
            f'cannot give. Cameras {", ".join(gen.cameras)}, up to {gen.max_frames} frames '
            f'spread over each episode, {len(gen.episodes)} episode(s); rendered in '
            f'{gen.render_s:.0f} s, scored in {gen.eval_s:.0f} s. "sim" is the untranslated '
            f'twin frame (the floor). Object px: distance of each object found by its colour '
            f'(the lab\'s for translations, the twin\'s for the floor) from where the lab shows '
            f'it; found: fraction of frames where it was found.\n\n'
            f'{markdown_table(gen.result.rows, gen.result.mean)}\n'
            + (f'![sim | translated | ground truth]({link(grid, out)})\n' if grid else ''))


def neural_sim_section(res: NeuralSimStageResult, out: Path, wall_s: float) -> str:
    from comsim_neural_sim.evaluation.ablation import markdown_table  # noqa: PLC0415
    held = ('held out: ' + ', '.join(res.held_out) if res.held_out else
            'only one paired episode: evaluated on its training episode (NOT held out)')
    abl = res.ablation
    gen = '' if res.generated is None else '\n' + generated_section(res.generated, out)
    return (f'## Neural simulator\n\n'
            f'Trained {res.train_steps} steps on {res.train_episodes} paired episode(s) '
            + (f'and {res.train_variants} replays of them in other twin looks '
               if res.train_variants else '') +
            f'(cameras {", ".join(res.cameras)}, one network; {res.height}x{res.width}, '
            f'{res.frames}-frame windows'
            + (f'; the twin\'s object pixels weighed {res.object_loss_weight:g}x in the loss'
               if res.object_loss_weight != 1.0 else '') +
            f') in {res.train_s:.0f} s; loss {res.first_loss:.4f} -> '
            f'{res.last_loss:.4f}. Translated {res.sim_episodes} sim episode(s) into '
            f'`{res.pseudo_real}` ({res.sample_steps} DDIM steps per window, '
            f'{res.translate_s:.0f} s).\n\n'
            f'![sim | translated | ground truth]({link(res.grid, out)})\n\n'
            f'Ablation ({held}):\n\n{markdown_table(abl.rows, len(set(abl.episodes)))}\n'
            f'{abl.note}\n{gen}'
            f'\n\nStage wall time {wall_s:.0f} s.')


# --- policy -------------------------------------------------------------------------------


def action_error(t: TrainedPolicy) -> str:
    """The validation action error in each number's own unit: the tool's position (mean over
    x, y, z, mm) and yaw (rad), or the joints (mean, rad), then the gripper; the mean over
    every number where a checkpoint logged no per-number errors."""
    by = t.val_action_mae_by_name
    if not by:
        return 'n/a' if t.val_action_mae is None else f'{t.val_action_mae:.4f}'
    xyz = [by[k] for k in ('x', 'y', 'z') if k in by]
    joints = [v for k, v in by.items() if k not in ('x', 'y', 'z', 'yaw', 'gripper')]
    parts = [f'{1000 * sum(xyz) / len(xyz):.1f} mm'] if xyz else []
    parts += [f'yaw {by["yaw"]:.3f} rad'] if 'yaw' in by else []
    parts += [f'joints {sum(joints) / len(joints):.4f} rad'] if joints else []
    parts += [f'gripper {by["gripper"]:.4f}'] if 'gripper' in by else []
    return ', '.join(parts)


def trained_row(t: TrainedPolicy) -> str:
    def fmt(v: float | None) -> str:
        return 'n/a' if v is None else f'{v:.4f}'
    src = ', '.join(f'{k} {v}' for k, v in sorted(t.episodes.get('sources', {}).items()))
    if t.episodes.get('failed_skipped'):
        src += f" ({t.episodes['failed_skipped']} failed left out)"
    return (f'| {t.name} | {t.task or "all"} | {src} | {t.steps} | {t.samples_per_s:.0f} | '
            f'{t.wall_s:.0f} | {fmt(t.val_loss)} | {action_error(t)} | '
            f'{fmt(t.val_image_sensitivity)} |')


def policy_section(res: PolicyStageResult, out: Path) -> str:
    lines = ['## Policy', '',
             f'Diffusion Policy trained on {res.device} ({res.cameras} camera(s) at '
             f'{res.image_size[0]}x{res.image_size[1]}, UNet {res.down_dims}, batch '
             f'{res.batch_size}, {res.inference_steps} DDIM steps); checkpoints under '
             f'`{link(res.checkpoints, out)}/`. Validation: held-out episodes, '
             'diffusion loss and mean absolute DDIM action error (the tool\'s position in mm '
             'and yaw in rad, or the joints in rad; the gripper\'s opening in m); image '
             'sensitivity: how far the actions move when a window gets another window\'s '
             'images (~0: the policy ignores its cameras).', '',
             '| arm | task | episodes | steps | samples/s | wall (s) | val loss | '
             'val action error | image sensitivity |', '|---|---|---|---|---|---|---|---|---|',
             *[trained_row(t) for t in res.trained], '',
             f'Closed loop on the bench lab, in process (the deploy node\'s controller on sim '
             f'time): {res.rollouts} rollouts per checkpoint, task and region '
             f'({", ".join(res.regions)} layouts, the same seeds {res.eval_seed}.. for every '
             f'checkpoint), each up to {res.timeout_factor:g}x the scripted expert\'s time on '
             f'its layout; {res.eval_wall_s:.0f} s wall. Success k/N with its Wilson 95 % '
             'interval; between two checkpoints the exact McNemar test on the paired seeds.',
             '', res.evaluation.markdown(), '']
    for rollout, png in res.pictures:
        lines += [f'**{rollout.checkpoint}** on {rollout.task} (seed {rollout.seed}, '
                  f'{"success" if rollout.success else "failure"}):', '',
                  f'![{rollout.checkpoint} {rollout.task}]({link(png, out)})', '']
    lines.append(f'Stage wall time {res.wall_s:.0f} s.')
    return '\n'.join(lines) + '\n'


# --- the experiment -----------------------------------------------------------------------


def ground_truth_section(rows: list[tuple[str, int, int, int, int]], wanted: int,
                         wall_s: float, exit_code: int) -> str:
    """Per task: generated, filmed, passing the lab's check, used by the arms."""
    lines = ['## Ground truth: the bench lab films the generated trajectories', '',
             f'Every generated trajectory is filmed by the bench lab (its realism profile, its '
             f'physics judging the filmed motion), {wall_s:.0f} s. The arms use the first '
             f'{wanted} per task that pass both the twin\'s and the lab\'s success check, so '
             'B (sim), C (pseudo-real), D and E (the lab\'s filming) learn the same motions.'
             + (' Some inputs failed to film (see logs/ground_truth.log).' if exit_code else ''),
             '', '| task | generated (twin success) | filmed | lab success | used |',
             '|---|---|---|---|---|']
    lines += [f'| {t} | {g} | {f} | {ok} | {used} |' for t, g, f, ok, used in rows]
    return '\n'.join(lines) + '\n'


def _num(v, fmt: str) -> str:
    return '–' if v is None else format(v, fmt)


def video_section(rows: list[dict], grids: dict[str, Path], out: Path,
                  pixels: tuple[int, int] = (96, 128), sim_detail: bool | None = None) -> str:
    """The video table: each conditioning mode's translations against the lab's filming;
    ``grids``: a picture of the pseudo-real row's frames per group."""
    used = {True: '`composed + sim detail`', False: '`composed`'}.get(sim_detail, '`composed`')
    lines = ['## Video table: translations against the bench lab\'s filming', '',
             'A few generated trajectories, split by the lab\'s region of their layout '
             '(`id`, `ood`; `other` when none of a small run\'s layouts lies in either box) '
             'and by their objects\' colours: the lab\'s default ones, which the policy\'s '
             'cells are scored on, or (`recoloured`) a hue the paired demonstrations never '
             'show; '
             'translated with each conditioning mode and scored against the bench lab filming '
             f'the same trajectory, in the policy\'s pixels ({pixels[0]}x{pixels[1]}). "sim '
             'frames" is the twin\'s own render (the floor); "+ sim detail" adds the sim\'s '
             'detail above the neural simulator\'s resolution to its output; the policy\'s '
             f'pseudo-real episodes are the {used} row. Objects: found by their lab colour in '
             'the camera\'s frames, mean distance (policy px) from where the lab\'s '
             'segmentation has them; "tracker on truth" is the tracker\'s own error on the '
             'ground truth. LPIPS, FID and FVD need network weights these machines do not '
             'have, so they are not reported.', '',
             '| region | row | episodes | PSNR (dB) | SSIM | objects found | object px | '
             'tracker on truth (px) |', '|---|---|---|---|---|---|---|---|']
    for r in rows:
        found = None if r['found'] is None else 100 * r['found']
        lines.append(f"| {r['region']} | {r['row']} | {r['episodes']} | "
                     f"{_num(r['psnr'], '.2f')} | {_num(r['ssim'], '.3f')} | "
                     f"{_num(found, '.0f')} % | {_num(r['object_px'], '.1f')} | "
                     f"{_num(r['truth_px'], '.1f')} |")
    for group, g in grids.items():
        lines += ['', f'![{group}: sim | {used} | ground truth]({link(g, out)})']
    return '\n'.join(lines) + '\n'


def training_curves(trained: list[TrainedPolicy], pictures: Path) -> list[Path]:
    """One chart per task: every arm's training loss."""
    from comsim_core.report.curves import jsonl_series, plot_curves

    charts = []
    for task in dict.fromkeys(t.task for t in trained):
        series = {t.label: jsonl_series(t.path / 'log.jsonl', 'loss')
                  for t in trained if t.task == task}
        png = plot_curves(series, pictures / f'training_loss_{task}.png',
                          f'{task}: training loss (log10) per arm')
        if png is not None:
            charts.append(png)
    return charts


def experiment_section(trials, labels: dict[str, str], out: Path, curves: list[Path]) -> str:
    """The success table in the paper's layout, the paired tests, D against zero."""
    from comsim_core.experiment import table

    tests = table.paired_tests(trials)
    lines = ['## The experiment: success per arm and cell', '',
             'Closed-loop rollouts on the bench lab, in process, the same layout seeds for every '
             'arm in a cell. Success k/N with its Wilson 95 % interval; `id`: layouts in the '
             'demonstrations\' region, `ood`: the lab\'s out-of-distribution region, '
             '`unseen <variant>`: an object variant no training set holds, on `id` layouts.', '',
             table.success_table(trials, labels), '',
             '### Paired tests', '',
             'On each cell, rollout k of both arms uses the same layout: the exact McNemar test '
             'on the pairs where only one arm succeeded (two-sided).', '',
             table.paired_table(tests) if tests else '(no two arms share a cell)', '',
             '### How the failures failed', '',
             'Failed rollouts per arm and cell: `untouched / touched`, whether the policy moved '
             'a task object more than 1 cm (a miss, or a push or grasp that went astray).', '',
             table.failure_table(trials, labels), '']
    zero = table.above_zero(trials, 'D')
    if zero:
        lines += ['### D: pseudo-real only, above zero?', '',
                  '| task | cell | success | 95 % interval | above zero |', '|---|---|---|---|---|']
        lines += [f"| {z['task']} | {z['cell']} | {z['successes']}/{z['rollouts']} | "
                  f"{100 * z['wilson_95'][0]:.0f}–{100 * z['wilson_95'][1]:.0f} % | "
                  f"{'yes' if z['above_zero'] else 'no'} |" for z in zero]
        lines.append('')
    for c in curves:
        lines += [f'![training loss per arm]({link(c, out)})', '']
    return '\n'.join(lines)


def co_trained(letters) -> bool:
    """Whether one of these arms mixes real and generated samples (B, C, E)."""
    from comsim_policy.arms import paper_arms, select_arms

    return any(len(a.weights) > 1 for a in select_arms(paper_arms(), letters))


def amendments_line(amendments: Sequence[dict]) -> str:
    """What resumes changed, for the report's first paragraph ('' when nothing)."""
    left = [f'{", ".join(m["leave_out"])} ({m["at"]})' for m in amendments if m.get('leave_out')]
    return (' Left out by a resume (not trained or rolled out; the normaliser is still fitted '
            f'on the data of every arm of the run): {"; ".join(left)}.' if left else '')


def experiment_report(out: Path, scale_name: str, cfg, scale, results: dict[str, dict],
                      timings: dict[str, float], commands: list[str],
                      amendments: Sequence[dict] = ()) -> str:
    """The whole report: the settings, the experiment's tables first, then every stage."""
    order = ('record', 'twin', 'ground_truth', 'neural_sim', 'video')
    lines = ['# ComSim main job: the paper\'s experiment on the bench lab', '',
             f'Run `{out.name}`, scale `{scale_name}`: tasks {", ".join(cfg.tasks)}; '
             f'{scale.real} real demos per arm ({scale.recorded} recorded), {scale.generated} '
             f'generated trajectories per task laid out over the twin\'s workspace at '
             f'{cfg.camera_hz:g} Hz, appearance randomisation '
             f'{"on" if cfg.appearance_randomisation else "off"}; arms {", ".join(scale.arms)}; '
             f'{scale.rollouts} rollouts per cell; policy recipe `{scale.policy_config}`'
             + (f' for {scale.policy_steps} steps' if scale.policy_steps else '')
             + (f', co-trained arms drawing {100 * cfg.generated_share:g} % of their samples '
                f'from generated data' if co_trained(scale.arms) else '')
             + f'; neural simulator {scale.neural_sim_steps} training steps.'
             + amendments_line(amendments), '']
    if 'policy' in results:
        lines.append(results['policy']['section'])
    else:
        lines += ['The experiment has not reached its policy stage yet (stages done: '
                  f'{", ".join(results) or "none"}).', '']
    lines += [results[s]['section'] for s in order if s in results]
    lines += ['## Timings and commands', '', '| stage | wall (s) |', '|---|---|']
    lines += [f'| {s} | {w:.0f} |' for s, w in timings.items()]
    lines += [f'| total | {sum(timings.values()):.0f} |', '', 'Commands of this run (a rerun '
              'with `--resume` continues where one stopped):', '', '```',
              *commands, '```', '']
    return '\n'.join(lines)
