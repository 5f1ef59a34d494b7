"""Translate a directory of sim episodes into pseudo-real episodes.

    python -m comsim_neural_sim.translate.cli SIM_DIR --checkpoint CKPT --out DIR \
        [--w-action A --w-sim V --steps N --seed S --mode composed --batch B]

Finished outputs are skipped, so re-running an interrupted command resumes it.
"""

from __future__ import annotations

import argparse
import sys

from comsim_core.errors import cli_main

from .episode import translate_dir


@cli_main('comsim-translate-episodes')
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('sim_dir', help='directory of sim episodes (recording layout)')
    ap.add_argument('--checkpoint', required=True, help='neural-sim checkpoint directory')
    ap.add_argument('--out', required=True, help='output directory for pseudo-real episodes')
    ap.add_argument('--w-action', type=float, default=1.0, help='control-dynamics weight')
    ap.add_argument('--w-sim', type=float, default=1.0, help='visual-dynamics weight')
    ap.add_argument('--steps', type=int, default=10, help='denoising steps')
    ap.add_argument('--seed', type=int, default=0)
    ap.add_argument('--mode', default='composed', help='composed|joint|action|sim|uncond')
    ap.add_argument('--batch', type=int, default=4, help='episodes per batched generation')
    ap.add_argument('--workers', type=int, default=1,
                    help='processes of one torch thread each (same frames as one process)')
    args = ap.parse_args(argv)
    if args.workers < 1:
        ap.error(f'--workers must be at least 1, got {args.workers}')
    out = translate_dir(args.sim_dir, args.checkpoint, args.out,
                        {'w_action': args.w_action, 'w_sim': args.w_sim}, args.steps,
                        args.seed, args.mode, args.batch, workers=args.workers)
    print(f'{len(out)} pseudo-real episodes in {args.out}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
