"""Open-loop replay: a recorded episode's observations through ``PolicyRunner``, as deployed.

    python -m comsim_policy.evaluation.open_loop --checkpoint output/policy \
        --data output/episodes [--stride 4] [--episodes 3] [--json out.json]

For every ``stride``-th camera frame of each episode the runner gets the native images and
joint states of the last ``n_obs_steps`` frames (exactly what the policy node hands it) and
predicts a chunk; the rows the node would execute are compared with the actions recorded for
those frames (the commands in force, as training labels them). Baselines on the same rows:
``hold`` (repeat the current joint state) tells how much the policy knows beyond "stay put".
It also checks that the runner's deploy preprocessing gives the training pipeline's pixels.

This isolates the policy from the closed loop: a policy that is far off here cannot succeed
there; one that is close here but fails there points at timing, control or compounding errors.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from comsim_core.episodes import find_episodes
from comsim_core.errors import cli_main

from ..inference import PolicyRunner, limit_cpu_threads
from ..preprocessing import ImagePreprocessor


def native_episode(path: Path, config) -> dict:
    """Native RGB frames per camera, joint state and action per first-camera frame."""
    from comsim_core.episodes import Episode  # noqa: PLC0415

    from ..data.episode_arrays import _reorder, camera_stream  # noqa: PLC0415

    with Episode.open(path) as ep:
        j_order = _reorder(ep.joint_states(config.joint_topic).names, config.joint_names,
                           config.joint_topic, path)
        cmd_topic = config.command_topic if config.command_topic in ep.topics else None
        c_order = (_reorder(ep.commands(cmd_topic).names, config.joint_names, cmd_topic, path)
                   if cmd_topic else None)
        images = {c: [] for c in config.camera_topics}
        states, actions, stamps = [], [], []
        streams = {camera_stream(ep.topics, c): c for c in config.camera_topics}
        for frame in ep.frames(list(streams), config.joint_topic, cmd_topic,
                               skip_unaligned=True):
            for stream, img in frame.images.items():
                images[streams[stream]].append(img)
            states.append(frame.joint_position[j_order])
            stamps.append(frame.t_ns)
            cmd = frame.command
            actions.append(cmd[c_order] if cmd is not None and c_order is not None else None)
    state = np.asarray(states)
    action = np.array([a if a is not None else state[min(i + 1, len(state) - 1)]
                       for i, a in enumerate(actions)])
    t = np.asarray(stamps, dtype=np.float64)
    rate = (len(t) - 1) / ((t[-1] - t[0]) / 1e9) if len(t) > 1 and t[-1] > t[0] else None
    return {'images': {c: np.stack(v) for c, v in images.items()}, 'state': state,
            'action': action, 'rate_hz': rate}


def _stride(ep: dict, control_hz: float) -> int:
    """Frames per control step (the windows training built: ``data.dataset.frame_stride``)."""
    return max(1, int(round(ep['rate_hz'] / control_hz))) if ep.get('rate_hz') else 1


def replay(runner: PolicyRunner, ep: dict, stride: int = 4, seed: int = 0,
           until: int | None = None) -> dict:
    """Per executed row k: mean |error| (policy, hold baseline) over frames and joints;
    predicting at frames before ``until`` only (all when None), labelled by the whole episode."""
    cfg = runner.config
    n = len(ep['state'])
    rows = runner.execute_slice
    n_exec = rows.stop - rows.start
    step = _stride(ep, cfg.control_hz)
    err, hold, grip_err = [], [], []
    for t in range(0, min(n, until or n), stride):
        obs_idx = np.clip(t + step * np.arange(-cfg.n_obs_steps + 1, 1), 0, n - 1)
        images = {c: ep['images'][c][obs_idx] for c in cfg.camera_topics}
        pred = runner.predict(images, ep['state'][obs_idx], seed=seed + t)[rows]
        idx = np.clip(t + step * np.arange(n_exec), 0, n - 1)
        truth = ep['action'][idx]
        err.append(np.abs(pred - truth))
        hold.append(np.abs(ep['state'][t][None] - truth))
        grip_err.append(np.abs(pred[:, -1] - truth[:, -1]))
    err, hold = np.stack(err), np.stack(hold)      # (frames, rows, joints)
    return {'frames': int(err.shape[0]),
            'mae': float(err.mean()), 'hold_mae': float(hold.mean()),
            'mae_per_row': err.mean((0, 2)).round(4).tolist(),
            'hold_mae_per_row': hold.mean((0, 2)).round(4).tolist(),
            'mae_per_joint': err.mean((0, 1)).round(4).tolist(),
            'hold_mae_per_joint': hold.mean((0, 1)).round(4).tolist(),
            'max_err_per_joint': err.max((0, 1)).round(4).tolist()}


def preprocessing_matches(runner: PolicyRunner, ep: dict) -> bool:
    """The runner's pixels from native frames (the checkpoint's preprocessor, through its
    input checks and tensor layout) = those training makes of them (the cache's resize, the
    validation windows' centre crop)."""
    cfg = runner.config
    training = ImagePreprocessor.from_config(cfg)
    t = min(1, len(ep['state']) - 1)
    images = {c: ep['images'][c][[t - 1 if t else 0, t]] for c in cfg.camera_topics}
    got, _ = runner.preprocess(images, ep['state'][[0, t]][-cfg.n_obs_steps:])
    for key, cam in zip(cfg.camera_keys, cfg.camera_topics, strict=True):
        want = training.crop(np.stack([training.resize(f) for f in images[cam]]))
        if not np.array_equal(got[key][0].permute(0, 2, 3, 1).cpu().numpy(), want):
            return False
    return True


@cli_main('comsim_policy.evaluation.open_loop')
def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--checkpoint', type=Path, required=True)
    p.add_argument('--data', type=Path, required=True, help='episode directory (or one episode)')
    p.add_argument('--episodes', type=int, default=0, help='first N episodes only (0: all)')
    p.add_argument('--task', default='', help='only episodes whose name contains this')
    p.add_argument('--stride', type=int, default=4)
    p.add_argument('--json', type=Path, default=None)
    args = p.parse_args(argv)
    limit_cpu_threads()
    runner = PolicyRunner.load(args.checkpoint, device='cpu')
    paths = [q for q in find_episodes(args.data) if args.task in q.name]
    if args.episodes:
        paths = paths[:args.episodes]
    out = {'checkpoint': str(args.checkpoint), 'episodes': {}}
    for path in paths:
        ep = native_episode(path, runner.config)
        res = {'preprocessing_matches_training': preprocessing_matches(runner, ep),
               **replay(runner, ep, args.stride)}
        out['episodes'][path.name] = res
        print(path.name, json.dumps(res), flush=True)
    eps = list(out['episodes'].values())
    if eps:
        out['mean_mae'] = float(np.mean([e['mae'] for e in eps]))
        out['mean_hold_mae'] = float(np.mean([e['hold_mae'] for e in eps]))
        print(f"mean over {len(eps)} episodes: policy {out['mean_mae']:.4f}, "
              f"hold {out['mean_hold_mae']:.4f}")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == '__main__':
    sys.exit(main())
