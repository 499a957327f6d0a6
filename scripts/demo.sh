#!/usr/bin/env bash
# The local demo, from a fresh Debian 12 machine: installs what is missing,
# builds rl-vla3 (Release), then
#   1. runs the runtime self-check (envs -> request queue -> dynamic batcher ->
#      LibTorch policy -> replies),
#   2. trains a short SFT warm start of TinyVLA on one MuJoCo task from
#      scripted-expert demonstrations (configs/libero_demo.yaml),
#   3. runs RL post-training from that checkpoint with the async engine
#      (env pool -> inference actors -> learner -> weight snapshots),
#   4. evaluates both checkpoints greedily on the same held-out initial
#      states, paired (scripts/paired_mcnemar.py),
# and ends with a summary. Extra arguments go to `rl-vla3 train` (e.g.
# --mode sync, or --set rl.duration_s=60).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "${JOBS:-$(nproc)}" --target rl-vla3
BIN=./build/services/rl-vla3
OUT=${RLVLA3_DEMO_OUT:-runs/demo}
mkdir -p "$OUT"

echo "== [1/4] runtime self-check"
$BIN selfcheck --config configs/selfcheck.yaml --set metrics.progress=off \
  | tee "$OUT/selfcheck.txt"
echo "== [2/4] SFT warm start: behaviour cloning from the scripted expert"
$BIN sft --config configs/libero_demo.yaml --set run.out_dir="$OUT" \
  --set run.name=sft --set threads.torch_intra_op="$(nproc)" | tee "$OUT/sft.txt"
echo "== [3/4] RL post-training (rl-vla3 train) from the SFT checkpoint"
$BIN train --config configs/libero_demo.yaml --set run.out_dir="$OUT" \
  --set run.name=train --set rl.resume=never \
  --init-checkpoint "$OUT/sft/checkpoint" "$@" \
  | tee "$OUT/train.txt"

# Greedy success before and after RL on the same held-out initial states:
# the test range (from 200,000), at 3.6x the experts' median length.
EVAL=${RLVLA3_DEMO_EVAL:-200}
echo "== [4/4] held-out evaluation: SFT and RL checkpoints, greedy, on the same $EVAL test-range initial states"
for ck in sft/checkpoint train/checkpoints/final; do
  $BIN eval --config configs/libero_demo.yaml --checkpoint "$OUT/$ck" \
    --range test --episodes "$EVAL" --outcomes "$OUT/${ck%%/*}.outcomes" \
    --set env.horizon_factor=3.6 \
    --set metrics.progress=off > "$OUT/${ck%%/*}_eval.txt" \
    2>"$OUT/${ck%%/*}_eval.err" || { cat "$OUT/${ck%%/*}_eval.err" >&2; exit 2; }
done

echo
echo "== demo summary"
grep -E "^self-check" "$OUT/selfcheck.txt"
grep -E "^mean success" "$OUT/sft.txt" | sed 's/^/SFT warm start (greedy eval): /'
grep -E "run: |^learner:|^policy lag|^rolling success|^success by start" "$OUT/train.txt" |
  sed 's/^/RL (sampled actions): /'
echo "greedy success on $EVAL held-out (test-range) initial states, before and after RL:"
python3 scripts/paired_mcnemar.py "$OUT/sft.outcomes" "$OUT/train.outcomes"
echo "report: $OUT/train/report.html (open it in a browser)"
