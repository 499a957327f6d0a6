#!/usr/bin/python3
"""One command for the same-work comparison: the C++ runtime against the
plain-PyTorch anchor (tiny_vla_anchor.py), same checkpoint, same work.

  bench/anchor/compare.py [--same-work build/bench/same_work] [--device cpu]
      [--sizes 128x2x4,512x8x8,768x14x12] [--batches 8,64] [--learner-batch 64]
      [--seconds 3] [--repeats 2] [--threads N] [--out DIR] [--python PY]

For each size (d_model x layers x heads) it writes one checkpoint (same_work
save), checks that the anchor's outputs match the C++ policy's on fixed inputs
(padded and packed), then runs anchor and C++ interleaved, `--repeats` times
each, and prints the median ratio C++ / anchor per row with the device and
both torch versions. JSON lines of every run and the table go to --out.
Exits 1 if a check disagrees, 2 on bad arguments.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def run(cmd, log):
    log.write("$ " + " ".join(cmd) + "\n")
    log.flush()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    log.write(p.stdout)
    log.flush()
    if p.returncode != 0:
        sys.stderr.write(p.stdout)
        raise SystemExit(f"compare: {' '.join(cmd)} exited {p.returncode}")
    return p.stdout


def read_rows(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def parse_sizes(text):
    sizes = []
    for s in text.split(","):
        d, layers, heads = (int(x) for x in s.split("x"))
        sizes.append((d, layers, heads))
    return sizes


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--same-work", default="build/bench/same_work")
    ap.add_argument("--python", default="/usr/bin/python3")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--sizes", default="128x2x4")
    ap.add_argument("--batches", default="8,64")
    ap.add_argument("--learner-batch", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--out", default="runs/anchor_compare")
    a = ap.parse_args(argv)
    try:
        sizes = parse_sizes(a.sizes)
    except ValueError:
        ap.error(f"--sizes: want DxLxH[,DxLxH...], got {a.sizes}")
    os.makedirs(a.out, exist_ok=True)
    log = open(os.path.join(a.out, "compare.log"), "w")
    common = ["--device", a.device, "--batches", a.batches, "--learner-batch",
              str(a.learner_batch), "--seconds", str(a.seconds), "--threads", str(a.threads)]
    anchor = [a.python, os.path.join(HERE, "tiny_vla_anchor.py")]
    results, header = [], []
    for d, layers, heads in sizes:
        ck = os.path.join(a.out, f"d{d}x{layers}")
        run([a.same_work, "save", ck, "--d-model", str(d), "--heads", str(heads),
             "--layers", str(layers)], log)
        run([a.same_work, "dump", ck, ck + ".dump.safetensors"], log)
        p = subprocess.run(anchor + ["check", ck, ck + ".dump.safetensors", "--device", a.device],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        log.write(p.stdout)
        checks = [line for line in p.stdout.splitlines() if line.startswith("check")]
        print(f"d{d}x{layers}: " + checks[-1] if checks else p.stdout)
        if p.returncode != 0:
            print(p.stdout)
            return 1
        for r in range(a.repeats):  # interleaved: anchor, C++, anchor, C++
            for side, cmd in (("anchor", anchor + ["time", ck]),
                              ("c++", [a.same_work, "time", ck])):
                path = os.path.join(a.out, f"d{d}x{layers}_{side}_{r}.jsonl")
                out = run(cmd + common + ["--json", path], log)
                header += [line for line in out.splitlines()
                           if line.startswith(("anchor:", "c++:"))]
                results += read_rows(path)
    table = format_table(results)
    print("\n".join(dict.fromkeys(header)))  # each side's description, once
    print(table)
    with open(os.path.join(a.out, "table.md"), "w") as f:
        f.write(table + "\n")
    return 0


def format_table(rows):
    by_key = {}
    for r in rows:
        key = (r["d_model"], r["layers"], r["heads"], r["what"], r["batch"])
        by_key.setdefault(key, {}).setdefault(r["side"], []).append(r)
    devices = sorted({r["device"] for r in rows})
    versions = sorted({f"{r['side']} torch {r['torch']}" for r in rows})
    lines = [f"device: {', '.join(devices)}; {', '.join(versions)}; "
             f"{rows[0]['threads']} intra-op threads; medians of "
             f"{max(len(v) for s in by_key.values() for v in s.values())} runs each",
             "",
             "| size | params | work | batch | anchor /s | C++ /s | C++ / anchor | C++ syncs/call |",
             "|---|---|---|---|---|---|---|---|"]
    for (d, layers, heads, what, batch), sides in sorted(by_key.items()):
        if "anchor" not in sides or "c++" not in sides:
            continue
        an = statistics.median(r["per_s"] for r in sides["anchor"])
        cc = statistics.median(r["per_s"] for r in sides["c++"])
        syncs = sides["c++"][0].get("syncs_per_call", -1)
        unit = "obs" if what == "inference" else "samples"
        lines.append(f"| d{d}x{layers} ({heads} heads) | {sides['c++'][0]['params'] / 1e6:.2f}M "
                     f"| {what} ({unit}/s) | {batch} | {an:,.1f} | {cc:,.1f} | **{cc / an:.2f}** "
                     f"| {'-' if syncs < 0 else f'{syncs:.2f}'} |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
