"""Report section for recorded episodes: duration, size, per-topic rates and drops, pictures."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import yaml

from comsim_core.report.episodes import contact_sheet
from comsim_core.report.images import save_png
from comsim_core.statistics import wilson_interval


def load_sidecars(episodes_dir: Path) -> list[tuple[Path, dict]]:
    """(episode dir, episode.yaml) for every episode under `episodes_dir`, in name order."""
    out = []
    for d in sorted(Path(episodes_dir).iterdir()):
        side = d / 'episode.yaml'
        if d.is_dir() and side.exists():
            out.append((d, yaml.safe_load(side.read_text())))
    return out


def success_table(outcomes: list[tuple[str, bool]]) -> str:
    """Markdown: recording success per task, k/N with its Wilson 95 % interval."""
    lines = ['| task | successful | rate | 95 % interval (Wilson) |', '|---|---|---|---|']
    for task in dict.fromkeys(t for t, _ in outcomes):
        ok = [s for t, s in outcomes if t == task]
        k, n = sum(ok), len(ok)
        lo, hi = wilson_interval(k, n)
        lines.append(f'| {task} | {k}/{n} | {100 * k / n:.0f} % '
                     f'| {100 * lo:.0f}–{100 * hi:.0f} % |')
    return '\n'.join(lines)


def _fmt_rate(stream: dict) -> str:
    rate, expected = stream.get('rate_hz'), stream.get('expected_rate_hz')
    if rate is None:
        return 'n/a'
    return f'{rate:.1f}' + (f' / {expected:g} ({100 * rate / expected:.0f} %)' if expected else '')


def recording_section(episodes_dir: Path, out_dir: Path, cameras: list[str],
                      frames_per_sheet: int = 6) -> str:
    """Markdown for the recording stage; writes contact sheets under `out_dir/pictures`."""
    episodes = load_sidecars(episodes_dir)
    lines = ['## Recording', '',
             f'{len(episodes)} episodes recorded by the scripted expert on the bench lab '
             f'(`{episodes_dir}`). Rates are achieved / expected Hz over each episode; drops are '
             'messages lost in the recorder queue plus those missing from gaps in a stream.', '',
             '| episode | task | success | status | duration (s) | size (MB) | drops | '
             'lowest rate vs expected |',
             '|---|---|---|---|---|---|---|---|']
    per_topic: dict[str, list[dict]] = {}
    for path, side in episodes:
        summary = side.get('summary') or {}
        streams = summary.get('streams', {})
        drops = sum(s.get('dropped', 0) + s.get('missed_estimate', 0) for s in streams.values())
        ratios = [s['rate_hz'] / s['expected_rate_hz'] for s in streams.values()
                  if s.get('rate_hz') and s.get('expected_rate_hz')]
        for topic, s in streams.items():
            per_topic.setdefault(topic, []).append(s)
        task = (side.get('metadata') or {}).get('task', '?')
        low = f'{min(ratios) * 100:.0f} %' if ratios else 'n/a'
        lines.append(f"| {path.name} | {task} | {side.get('success')} | {side.get('status')} | "
                     f"{summary.get('duration_s', 0):.1f} | "
                     f"{summary.get('bag_bytes', 0) / 1e6:.1f} | {drops} | {low} |")
    lines += ['', '### Per topic, over all episodes', '',
              '| topic | messages | mean rate (Hz) | expected (Hz) | lowest episode rate | '
              'queue drops | missed (gaps) | max gap (s) |', '|---|---|---|---|---|---|---|---|']
    for topic, items in per_topic.items():
        rates = [s['rate_hz'] for s in items if s.get('rate_hz')] or [float('nan')]
        gaps = [s['max_gap_s'] for s in items if s.get('max_gap_s') is not None] or [0.0]
        lines.append(
            f"| `{topic}` | {sum(s['count'] for s in items)} | {np.mean(rates):.2f} | "
            f"{items[0].get('expected_rate_hz') or '-'} | {min(rates):.2f} | "
            f"{sum(s.get('dropped', 0) for s in items)} | "
            f"{sum(s.get('missed_estimate', 0) for s in items)} | {max(gaps):.3f} |")
    lines += ['', '### Contact sheets', '']
    for path, side in episodes:
        try:
            sheet = contact_sheet(path, cameras, frames_per_sheet)
        except Exception as exc:  # one unreadable episode must not sink the report
            lines.append(f'- {path.name}: no contact sheet ({exc})')
            continue
        png = save_png(Path(out_dir) / 'pictures' / f'{path.name}.png', sheet)
        lines += [f'**{path.name}** ({(side.get("metadata") or {}).get("task")}, '
                  f'success={side.get("success")})', '',
                  f'![{path.name}]({png.relative_to(out_dir)})', '']
    return '\n'.join(lines)
