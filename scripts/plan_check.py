#!/usr/bin/env python3
"""Predicted against measured (issue 62): each configuration run for real
(`rl-vla3 train` in one process, or `rl-vla3 up --local` as processes) and
forecast by `rl-vla3 plan --forecast` from the stage costs `rl-vla3 bench
--stage-costs` measured of the same config on this machine, one after the
other (nothing else should run). Prints a markdown table (each figure, each
error) and writes every figure as JSON.

  /usr/bin/python3 scripts/plan_check.py --out /tmp/plan_check [--duration 30]
      [--repeat 3] [--only NAME,NAME]

Measured: env frames/s and trained samples/s (train: the run's summary;
up --local: the mean of its progress lines after the first 6 s), the lag
mean and each stage's busy share (train only: up --local's roles do not
print them), the bottleneck (the busiest stage), the async/sync ratio where
both modes ran. With --repeat N each run is made N times (one after the
other) and the median run (by samples/s) is reported, with the range.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "build", "services", "rl-vla3")

# name, config, how (train | processes), --set overrides, modes
ROWS = [
    ("toy", "configs/toy_reach.yaml", "train", [], ["async", "sync"]),
    ("bench_cpu", "configs/bench_cpu.yaml", "train", [], ["async", "sync"]),
    ("latency", "configs/bench_libero_latency.yaml", "train", [],
     ["async", "sync"]),
    ("bench_cpu lag 0", "configs/bench_cpu.yaml", "train",
     ["rl.max_policy_lag=0"], ["async"]),
    ("bench_cpu lag 2", "configs/bench_cpu.yaml", "train",
     ["rl.max_policy_lag=2"], ["async"]),
    ("up 2 rollout", "configs/bench_cpu.yaml", "processes",
     ["cluster.rollout_workers=2"], ["async"]),
    ("up 3 rollout", "configs/bench_cpu.yaml", "processes",
     ["cluster.rollout_workers=3"], ["async"]),
    ("up 2 inference", "configs/bench_cpu.yaml", "processes",
     ["cluster.inference_servers=2"], ["async"]),
    ("up 2 ranks", "configs/bench_cpu.yaml", "processes",
     ["cluster.rollout_workers=2", "cluster.learner_ranks=2"], ["async"]),
    # What `plan` recommends for this VM from configs/stage_costs/
    # vm_bench_cpu.json (docs/planning.md), and its best in one process.
    ("plan's pick", "configs/bench_cpu.yaml", "processes",
     ["cluster.rollout_workers=3", "cluster.learner_ranks=2",
      "threads.env_workers=2"], ["async"]),
    ("bench_cpu 2 env threads", "configs/bench_cpu.yaml", "train",
     ["threads.env_workers=2"], ["async"]),
]


def sets(overrides):
    out = []
    for s in overrides:
        out += ["--set", s]
    return out


def run(cmd, log, timeout):
    t0 = time.time()
    with open(log, "w") as f:
        p = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT,
                           timeout=timeout, cwd=ROOT)
    if p.returncode != 0:
        sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}; see {log}")
    return time.time() - t0, open(log).read()


def measure_train(config, overrides, mode, out, duration):
    log = os.path.join(out, "run.log")
    _, text = run([BIN, "train", "--config", config, "--mode", mode,
                   "--set", f"rl.duration_s={duration}",
                   "--set", f"run.out_dir={out}",
                   "--set", "metrics.progress=off"] + sets(overrides),
                  log, duration + 300)
    frames = float(re.search(r"env frames \(([\d.]+) frames/s\)", text)[1])
    samples = float(re.search(r"samples trained \(([\d.]+) samples/s\)",
                              text)[1])
    lag = float(re.search(r"policy lag mean ([\d.]+)", text)[1])
    busy = re.search(r"busy env (\d+)% inference (\d+)% learner (\d+)%",
                     text)
    shares = {"env": int(busy[1]), "inference": int(busy[2]),
              "learner": int(busy[3])}
    return {"frames_per_s": frames, "samples_per_s": samples,
            "lag_mean": lag, "busy": shares,
            "bottleneck": max(shares, key=shares.get)}


def measure_up(config, overrides, mode, out, duration):
    log = os.path.join(out, "up.log")
    _, text = run([BIN, "up", "--local", "--config", config,
                   "--set", f"run.mode={mode}",
                   "--set", f"rl.duration_s={duration}",
                   "--set", f"run.out_dir={out}",
                   "--set", "metrics.progress=off"] + sets(overrides),
                  log, duration + 300)
    rows = re.findall(r"\[\s*(\d+)s\] version \d+, \d+ steps, (\d+) samples/s"
                      r" \| \d+ obs/s \| (\d+) frames/s", text)
    late = [(float(s), float(f)) for t, s, f in rows if int(t) >= 6]
    if not late:
        sys.exit(f"no progress lines after 6 s in {log}")
    return {"frames_per_s": statistics.mean(f for _, f in late),
            "samples_per_s": statistics.mean(s for s, _ in late)}


def stage_costs(config, overrides, out):
    path = os.path.join(out, "costs.json")
    if not os.path.exists(path):
        run([BIN, "bench", "--config", config, "--stage-costs", path,
             "--set", f"run.out_dir={out}"] + sets(overrides),
            os.path.join(out, "costs.log"), 900)
    return path


def forecast(config, overrides, how, costs, out):
    path = os.path.join(out, "forecast.json")
    run([BIN, "plan", "--config", config, "--stage-costs", costs,
         "--forecast", how, "--json", path] + sets(overrides),
        os.path.join(out, "plan.log"), 600)
    return json.load(open(path))


def err(pred, meas):
    return pred / meas - 1 if meas else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--duration", type=int, default=30)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    only = set(filter(None, a.only.split(",")))
    os.makedirs(a.out, exist_ok=True)
    results = []
    for name, config, how, overrides, modes in ROWS:
        if only and name not in only:
            continue
        slug = re.sub(r"[^a-z0-9]+", "_", name)
        base = os.path.join(a.out, slug)
        os.makedirs(base, exist_ok=True)
        # Stage costs depend on the config, not on the split.
        cost_dir = os.path.join(a.out, "costs_" + re.sub(
            r"[^a-z0-9]+", "_", os.path.basename(config)))
        os.makedirs(cost_dir, exist_ok=True)
        costs = stage_costs(config, [], cost_dir)
        pred = forecast(config, overrides, how, costs, base)
        row = {"name": name, "config": config, "how": how,
               "overrides": overrides, "predicted": pred, "measured": {}}
        for mode in modes:
            runs = []
            for k in range(a.repeat):
                d = os.path.join(base, mode if k == 0 else f"{mode}_{k}")
                os.makedirs(d, exist_ok=True)
                runs.append((measure_train if how == "train" else measure_up)(
                    config, overrides, mode, d, a.duration))
            runs.sort(key=lambda m: m["samples_per_s"])
            m = dict(runs[len(runs) // 2])
            m["samples_range"] = [runs[0]["samples_per_s"],
                                  runs[-1]["samples_per_s"]]
            m["frames_range"] = [min(r["frames_per_s"] for r in runs),
                                 max(r["frames_per_s"] for r in runs)]
            row["measured"][mode] = m
            print(f"{name} {mode}: measured {m}; predicted "
                  f"{pred[mode]['frames_per_s']:.0f} frames/s "
                  f"{pred[mode]['samples_per_s']:.0f} samples/s",
                  flush=True)
        results.append(row)
        json.dump(results, open(os.path.join(a.out, "plan_check.json"), "w"),
                  indent=1)
    print("\n| configuration | mode | frames/s measured / predicted (error) | "
          "samples/s measured / predicted (error) | lag mean measured / "
          "predicted | bottleneck measured / predicted | async/sync measured"
          " / predicted (error) |")
    print("|---|---|---|---|---|---|---|")
    for r in results:
        for mode, m in r["measured"].items():
            p = r["predicted"][mode]
            lag = (f"{m['lag_mean']:.2f} / {p['lag_mean']:.2f}"
                   if "lag_mean" in m else f"- / {p['lag_mean']:.2f}")
            neck = (f"{m['bottleneck']} / {p['bottleneck']}"
                    if "bottleneck" in m else f"- / {p['bottleneck']}")
            ratio = ""
            if mode == "async" and "sync" in r["measured"]:
                mr = m["frames_per_s"] / r["measured"]["sync"]["frames_per_s"]
                pr = p["frames_per_s"] / r["predicted"]["sync"]["frames_per_s"]
                ratio = f"{mr:.2f} / {pr:.2f} ({100 * err(pr, mr):+.0f}%)"
            spread = ""
            if a.repeat > 1:
                lo, hi = m["samples_range"]
                spread = f" [{lo:.0f}-{hi:.0f}]"
            print(f"| {r['name']} | {mode} | {m['frames_per_s']:.0f} / "
                  f"{p['frames_per_s']:.0f} "
                  f"({100 * err(p['frames_per_s'], m['frames_per_s']):+.0f}%)"
                  f" | {m['samples_per_s']:.0f}{spread} / "
                  f"{p['samples_per_s']:.0f} "
                  f"({100 * err(p['samples_per_s'], m['samples_per_s']):+.0f}"
                  f"%) | {lag} | {neck} | {ratio} |")


if __name__ == "__main__":
    main()
