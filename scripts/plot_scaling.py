#!/usr/bin/env python3
"""Throughput and efficiency against GPUs, sync and async, from the JSON
`rl-vla3 plan --table ... --json F` writes (one object per GPU count), as an
SVG with no plotting library (docs/planning.md's picture).

  /usr/bin/python3 scripts/plot_scaling.py OUT.svg TABLE.json [LABEL]
"""
import json
import math
import sys

W, H, PAD = 860, 340, 60
PANEL = (W - 3 * PAD) / 2
COLORS = {"async": "#1f77b4", "sync": "#d62728"}


def load(path):
    rows = [json.loads(line) for line in open(path) if line.strip()]
    if not rows:
        sys.exit(f"{path}: no rows")
    return sorted(rows, key=lambda r: r["gpus"])


def xpos(x0, gpus, lo, hi):
    span = math.log(hi) - math.log(lo) or 1
    return x0 + PANEL * (math.log(gpus) - math.log(lo)) / span


def ypos(v, top):
    return PAD + (H - 2 * PAD) * (1 - v / top)


def panel(out, x0, title, rows, value, top, ylabel, fmt):
    lo, hi = rows[0]["gpus"], rows[-1]["gpus"]
    out.append(f'<rect x="{x0}" y="{PAD}" width="{PANEL}" height="{H - 2 * PAD}" '
               'fill="none" stroke="#999"/>')
    out.append(f'<text x="{x0 + PANEL / 2}" y="{PAD - 20}" text-anchor="middle" '
               f'font-size="14">{title}</text>')
    out.append(f'<text x="{x0 - 45}" y="{H / 2}" font-size="11" '
               f'transform="rotate(-90 {x0 - 45} {H / 2})" '
               f'text-anchor="middle">{ylabel}</text>')
    for k in range(5):
        v = top * k / 4
        y = ypos(v, top)
        out.append(f'<text x="{x0 - 5}" y="{y + 4}" text-anchor="end" '
                   f'font-size="10">{fmt(v)}</text>')
    for r in rows:
        x = xpos(x0, r["gpus"], lo, hi)
        out.append(f'<text x="{x}" y="{H - PAD + 15}" text-anchor="middle" '
                   f'font-size="10">{r["gpus"]}</text>')
    out.append(f'<text x="{x0 + PANEL / 2}" y="{H - PAD + 32}" '
               'text-anchor="middle" font-size="11">GPUs</text>')
    for mode, color in COLORS.items():
        pts = [(xpos(x0, r["gpus"], lo, hi), ypos(value(r, mode), top))
               for r in rows]
        out.append('<polyline fill="none" stroke="{}" stroke-width="2" '
                   'points="{}"/>'.format(
                       color, " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)))
        for x, y in pts:
            out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{color}"/>')


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    rows = load(sys.argv[2])
    label = sys.argv[3] if len(sys.argv) > 3 else ""
    first = rows[0]
    base = first["async"]["samples_per_s"] / first["gpus"]

    def samples(r, mode):
        return r[mode]["samples_per_s"]

    def efficiency(r, mode):
        return 100 * r[mode]["samples_per_s"] / r["gpus"] / base

    top = max(samples(r, m) for r in rows for m in COLORS) * 1.1
    top_e = max(110, max(efficiency(r, m) for r in rows for m in COLORS) * 1.1)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           'font-family="sans-serif">',
           f'<rect width="{W}" height="{H}" fill="white"/>']
    panel(out, PAD, "trained samples/s (forecast)", rows, samples, top,
          "samples/s", lambda v: f"{v / 1000:.0f}k" if top > 5000 else f"{v:.0f}")
    panel(out, 2 * PAD + PANEL, "samples/s per GPU, % of async at "
          f"{first['gpus']} GPUs", rows, efficiency, top_e, "%",
          lambda v: f"{v:.0f}")
    for i, (mode, color) in enumerate(COLORS.items()):
        out.append(f'<text x="{PAD + 10 + 70 * i}" y="{H - 8}" fill="{color}" '
                   f'font-size="12">{mode}</text>')
    if label:
        out.append(f'<text x="{W - PAD}" y="{H - 8}" text-anchor="end" '
                   f'font-size="11">{label}</text>')
    out.append("</svg>")
    with open(sys.argv[1], "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
