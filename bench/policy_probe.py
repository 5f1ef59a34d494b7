"""Do a policy's image features carry where the task's objects are? A linear probe.

    .venv/bin/python bench/policy_probe.py --checkpoints CKPT [CKPT ...] \\
        --data /work/gate/move_card/gt --cache-dir /work/gate/cache [--episodes 200]

For each ground-truth episode (the bench lab filming a generated trajectory), the first frame
of every camera goes through each checkpoint's encoders (centre crop, as at deploy time); the
spatial-softmax keypoints of all cameras are the features. A ridge regression, cross-validated
over episodes (5 folds), predicts the object positions of the episode's layout (read from the
generated episode it films: the card's start and the zone centre for move_card). Reported per
checkpoint and object: the median and 90th-percentile position error in cm, and the same for
predicting the mean layout (what features with no position in them would give). The same
network with its initial (untrained) weights is the control: random convolutional features
carry some position too, and the trained ones should carry more.

Why: the swap sensitivities the trainer logs (how much another window's images move the
actions) did not change between a recipe that fails and one that succeeds, so they do not tell
whether the cameras are read. A policy cannot put the card in the zone more precisely than
its features place the card and the zone.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from provenance import add_out_argument, torch_machine, write_result

OBJECTS = {'move_card': {'card': ('objects', 'card', 'pos'),
                         'zone': ('target', 'zone_center')},
           'stack_blocks': {}, 'shake_bottle': {}}


def layout_positions(gt_episode: Path, task: str) -> dict[str, np.ndarray] | None:
    """The xy of each probed object at the start of ``gt_episode``, from the generated episode
    it films; None when that episode is gone."""
    from comsim_core.episodes.generated_layout import generated_layout

    rand = generated_layout(gt_episode)
    out = {}
    for name, keys in OBJECTS[task].items():
        node = rand
        for k in keys:
            node = (node or {}).get(k)
        if node is None:
            return None
        out[name] = np.asarray(node, dtype=np.float64)[:2]
    return out


def features(model, frames: dict[str, np.ndarray]) -> np.ndarray:
    """Keypoints (x, y per keypoint) of every camera for one frame each: (2K * cameras,)."""
    import torch

    parts = []
    with torch.no_grad():
        for key, topic in zip(model.config.camera_keys, model.config.camera_topics, strict=True):
            img = model.preprocessor.crop(frames[topic][None])
            x = torch.from_numpy(np.ascontiguousarray(img)).permute(0, 3, 1, 2)
            x = model.preprocessor.normalise(x).contiguous(memory_format=torch.channels_last)
            enc = model.encoders[key]
            parts.append(enc.pool(enc.stages(enc.stem(x)))[0].numpy())
    return np.concatenate(parts)


def ridge_cv(x: np.ndarray, y: np.ndarray, folds: int = 5, seed: int = 0,
             alphas=(1e-3, 1e-2, 1e-1, 1.0, 10.0)) -> np.ndarray:
    """Out-of-fold predictions of ``y`` from ``x`` (features standardised on each training
    fold), the ridge strength picked by the lowest out-of-fold error."""
    rng = np.random.default_rng(seed)
    fold = rng.permutation(len(x)) % folds
    best, best_err = None, np.inf
    for alpha in alphas:
        pred = np.zeros_like(y)
        for f in range(folds):
            tr, te = fold != f, fold == f
            mu, sd = x[tr].mean(0), x[tr].std(0) + 1e-8
            a = np.c_[(x[tr] - mu) / sd, np.ones(tr.sum())]
            w = np.linalg.solve(a.T @ a + alpha * np.eye(a.shape[1]), a.T @ y[tr])
            pred[te] = np.c_[(x[te] - mu) / sd, np.ones(te.sum())] @ w
        err = float(np.linalg.norm(pred - y, axis=1).mean())
        if err < best_err:
            best, best_err = pred, err
    return best


def summary(err_m: np.ndarray) -> dict[str, float]:
    return {'median_cm': round(float(np.median(err_m)) * 100, 2),
            'p90_cm': round(float(np.percentile(err_m, 90)) * 100, 2)}


def first_frames(episodes, cache) -> list[dict[str, np.ndarray]]:
    """Each episode's first frame per camera, at the policy's image size (decoded once: the
    cache hashes an episode's files on every lookup)."""
    frames = []
    for path, _ in episodes:
        arrays = cache.get(path, 'gt')
        frames.append({t: np.array(arrays.images[t][0]) for t in arrays.images})
    return frames


def probe(model, episodes, frames, task: str) -> dict:
    feats, targets = [], {n: [] for n in OBJECTS[task]}
    for (_, pos), first in zip(episodes, frames, strict=True):
        feats.append(features(model, first))
        for n in targets:
            targets[n].append(pos[n])
    x = np.stack(feats)
    out = {}
    for name, ys in targets.items():
        y = np.stack(ys)
        pred = ridge_cv(x, y)
        out[name] = {'probe': summary(np.linalg.norm(pred - y, axis=1)),
                     'mean_layout': summary(np.linalg.norm(y - y.mean(0), axis=1))}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--checkpoints', type=Path, nargs='+', required=True)
    ap.add_argument('--data', type=Path, required=True, help='ground-truth episodes')
    ap.add_argument('--task', default='move_card', choices=sorted(k for k, v in OBJECTS.items()
                                                                 if v))
    ap.add_argument('--cache-dir', type=Path, default=None)
    ap.add_argument('--episodes', type=int, default=200)
    add_out_argument(ap, __file__)
    args = ap.parse_args()

    import torch

    from comsim_core.episodes import find_episodes
    from comsim_policy.checkpoint import from_pretrained
    from comsim_policy.data.cache import FrameCache
    from comsim_policy.model.policy import DiffusionPolicyModel

    torch.set_num_threads(1)
    episodes = []
    for path in find_episodes(args.data)[:args.episodes]:
        pos = layout_positions(path, args.task)
        if pos is not None:
            episodes.append((path, pos))
    if len(episodes) < 20:
        sys.exit(f'policy_probe: {len(episodes)} episodes under {args.data} have a layout to '
                 'probe; need at least 20')
    results, frames, size = {}, None, None
    for ckpt in args.checkpoints:
        model = from_pretrained(ckpt).eval()
        if size != list(model.config.image_size):
            size = list(model.config.image_size)
            frames = first_frames(episodes, FrameCache(args.cache_dir, model.config))
        torch.manual_seed(0)
        untrained = DiffusionPolicyModel(model.config, model.preprocessor).eval()
        results[str(ckpt)] = {'trained': probe(model, episodes, frames, args.task),
                              'untrained_control': probe(untrained, episodes, frames, args.task)}
        print(ckpt, results[str(ckpt)], flush=True)
    write_result(args.out, {'task': args.task, 'episodes': len(episodes),
                            'data': str(args.data), 'results': results}, torch_machine())
    return 0


if __name__ == '__main__':
    sys.exit(main())
