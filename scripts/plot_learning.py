#!/usr/bin/env python3
"""Sync vs async learning as one SVG (no plotting library needed).

Reads the learning_curve.json that `rl-vla3 train` writes into each run
folder and draws, side by side, the success of the episodes grouped by the
policy version that started them against trained samples and against wall
time; each point is labelled with the number of episodes behind it.

  scripts/plot_learning.py OUT.svg RUN_DIR [RUN_DIR ...]
"""
import json
import sys

W, H, PAD_L, PAD_B, PAD_T = 360, 260, 48, 40, 28
COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"]


def panel(x0, runs, key, x_label, title):
    xs = [p[key] for r in runs for p in r["by_version"]] or [1]
    x_max = max(xs) * 1.05 or 1
    plot_w, plot_h = W - PAD_L - 12, H - PAD_B - PAD_T
    sx = lambda x: x0 + PAD_L + plot_w * x / x_max
    sy = lambda y: PAD_T + plot_h * (1 - y)
    out = [f'<text x="{x0 + PAD_L}" y="16" font-weight="bold">{title}</text>']
    for k in range(0, 6):
        y = k / 5
        out.append(f'<line x1="{x0 + PAD_L}" y1="{sy(y):.1f}" '
                   f'x2="{x0 + W - 12}" y2="{sy(y):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{x0 + PAD_L - 4}" y="{sy(y) + 4:.1f}" '
                   f'text-anchor="end">{int(100 * y)}%</text>')
    for k in range(0, 5):
        x = x_max * k / 4
        out.append(f'<text x="{sx(x):.1f}" y="{H - PAD_B + 14}" '
                   f'text-anchor="middle">{x:.0f}</text>')
    out.append(f'<text x="{x0 + PAD_L + plot_w / 2}" y="{H - 8}" '
               f'text-anchor="middle">{x_label}</text>')
    for i, r in enumerate(runs):
        c = COLOURS[i % len(COLOURS)]
        pts = [(sx(p[key]), sy(p["success"]), p["episodes"])
               for p in r["by_version"] if p["episodes"] > 0]
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y, _ in pts)
        out.append(f'<polyline points="{path}" fill="none" stroke="{c}" '
                   f'stroke-width="2"/>')
        for x, y, n in pts:
            out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{c}"/>')
            out.append(f'<text x="{x:.1f}" y="{y - 6:.1f}" font-size="8" '
                       f'text-anchor="middle" fill="{c}">{n}</text>')
    return out


def main(argv):
    if len(argv) < 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    runs = []
    for d in argv[2:]:
        with open(f"{d}/learning_curve.json", encoding="utf-8") as f:
            runs.append(json.load(f))
        runs[-1]["label"] = d.rstrip("/").split("/")[-1]
    svg = [f'<svg width="{2 * W}" height="{H + 20}" '
           'xmlns="http://www.w3.org/2000/svg" font-family="sans-serif" '
           'font-size="11">', '<rect width="100%" height="100%" fill="white"/>']
    svg += panel(0, runs, "trained_samples", "trained samples",
                 "success by start version vs trained samples")
    svg += panel(W, runs, "wall_s", "wall time (s)", "... vs wall time")
    for i, r in enumerate(runs):
        svg.append(f'<text x="{PAD_L + 170 * i}" y="{H + 14}" '
                   f'fill="{COLOURS[i % len(COLOURS)]}">'
                   f'{r["mode"]}: {r["label"]}</text>')
    svg.append("</svg>")
    with open(argv[1], "w", encoding="utf-8") as f:
        f.write("\n".join(svg) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
