#!/usr/bin/env bash
# What a checkpoint costs the learner (issue 39): `rl-vla3 train` on configs/bench_cpu.yaml with a
# checkpoint after every version, at the default TinyVLA and at d_model 512 x 6 layers, and the
# learner's stall at the default interval (rl.checkpoint_every_s = 120): mean checkpoint ms / 120 s.
# The learner thread writes the checkpoint itself (weights, optimizer shard, MANIFEST with
# hashes, rename, prune), so each figure is time the learner did not train.
#   bash scripts/checkpoint_stall.sh [OUT]      (DUR=seconds per size, default 90)
set -euo pipefail
BIN=${BIN:-build/services/rl-vla3}
OUT=${1:-runs/checkpoint_stall}
DUR=${DUR:-90}
mkdir -p "$OUT"
for size in "default:" "d512x6:--set policy.d_model=512 --set policy.layers=6 --set policy.heads=8"; do
  name=${size%%:*}
  sets=${size#*:}
  # shellcheck disable=SC2086
  "$BIN" train --config configs/bench_cpu.yaml --set run.out_dir="$OUT" --set run.name="$name" \
    --set rl.resume=never --set rl.duration_s="$DUR" --set rl.checkpoint_every=1 \
    --set rl.keep_checkpoints=2 --set metrics.progress=off $sets > "$OUT/$name.log" 2>&1
  /usr/bin/python3 - "$OUT" "$name" <<'PY'
import glob, os, re, statistics, sys
out, name = sys.argv[1], sys.argv[2]
log = open(os.path.join(out, name + ".log")).read()
ms = [float(x) for x in re.findall(r"learner: checkpoint \S+ \((\d+) ms\)", log)]
step = re.search(r"learner: (\d+) optimizer steps \(([\d.]+) s/step\)", log)
ck = sorted(glob.glob(os.path.join(out, name, "checkpoints", "version_*")))
params = os.path.getsize(os.path.join(ck[-1], "model.safetensors")) / 4 if ck else 0
size = sum(os.path.getsize(f) for f in glob.glob(os.path.join(ck[-1], "**"), recursive=True)
           if os.path.isfile(f)) / 2**20 if ck else 0
if not ms or not step:
    sys.exit(f"{name}: no checkpoint or step figures in {out}/{name}.log")
mean = statistics.mean(ms)
print(f"{name}: ~{params / 1e6:.1f}M parameters, checkpoint {size:.0f} MiB; "
      f"{len(ms)} checkpoints: mean {mean:.0f} ms, median {statistics.median(ms):.0f} ms, "
      f"max {max(ms):.0f} ms; learner {step.group(2)} s/step; stall at the default "
      f"120 s interval {100 * mean / 120000:.2f}% of learner time")
PY
done
