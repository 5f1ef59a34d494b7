"""comsim-calibrate: camera calibration YAMLs from a recorded calibration session."""
from __future__ import annotations

import argparse

from comsim_core.errors import cli_main

from .pipeline import calibrate_from_bag


@cli_main('comsim-calibrate')
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description='Calibrate cameras from a calibration episode.')
    ap.add_argument('episode', help='calibration episode directory (rosbag2 + episode.yaml)')
    ap.add_argument('--out', required=True, help='folder for <camera>.yaml and the report')
    ap.add_argument('--setup', default=None, help='calibration setup YAML '
                    '(default config/twin/calibration.yaml)')
    args = ap.parse_args(argv)
    reports = calibrate_from_bag(args.episode, args.out, args.setup)
    for cam, r in reports.items():
        i, e = r['intrinsics'], r['extrinsics']
        print(f'{cam}: {len(i["used_views"])} views used, {len(i["rejected_views"])} rejected, '
              f'reprojection rms {i["rms_px"]:.3f} px (mean {i["mean_error_px"]:.3f}); '
              f'extrinsics over {len(e["residuals"])} placements rms {e["rms_px"]:.3f} px '
              f'-> {r["file"]}')
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
