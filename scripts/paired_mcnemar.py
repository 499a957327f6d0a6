#!/usr/bin/env python3
"""Paired comparison of two evaluations on the same initial states.

Reads two files written by `rl-vla3 eval --outcomes FILE` (lines: task,
initial state, 1/0), pairs episodes by (task, initial state) and prints the
success of each, the difference in points, the discordant pairs and the
exact two-sided McNemar p-value (binomial on the discordant pairs).

  scripts/paired_mcnemar.py BEFORE AFTER
"""
import math
import sys


def read(path):
    out = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            parts = line.split()
            if len(parts) != 3:
                continue
            out[(parts[0], int(parts[1]))] = parts[2] == "1"
    return out


def mcnemar_exact(b, c):
    """Two-sided exact p-value of b vs c discordant pairs (p = 1/2)."""
    n = b + c
    if n == 0:
        return 1.0
    k = min(b, c)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2.0**n
    return min(1.0, 2.0 * tail)


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    before, after = read(argv[1]), read(argv[2])
    keys = sorted(set(before) & set(after))
    if not keys:
        print("paired_mcnemar: no common (task, initial state)", file=sys.stderr)
        return 2
    n = len(keys)
    s0 = sum(before[k] for k in keys)
    s1 = sum(after[k] for k in keys)
    b = sum(before[k] and not after[k] for k in keys)  # lost
    c = sum(after[k] and not before[k] for k in keys)  # gained
    p = mcnemar_exact(b, c)
    print(f"paired episodes {n}: before {100.0 * s0 / n:.1f}% after "
          f"{100.0 * s1 / n:.1f}% difference {100.0 * (s1 - s0) / n:+.1f} "
          f"points; gained {c}, lost {b}; McNemar exact p = {p:.2g}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
