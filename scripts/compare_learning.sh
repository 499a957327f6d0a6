#!/usr/bin/env bash
# Learning in sync vs async mode on equal sample budgets: one SFT warm start,
# then `rl-vla3 train` from it in each mode for each seed, every run stopped
# after the same number of optimizer steps (so the same number of trained
# samples). Prints, per run, the success rate of the episodes grouped by the
# policy version that started them (4 equal version ranges: the learning
# curve), then the mean over seeds per mode, and the greedy success of the
# SFT start and of each run's final checkpoint over EVAL held-out initial
# states (FIRST .. FIRST + EVAL - 1, default 50..449, disjoint from the
# states training draws from; the same states for all: a paired comparison).
#   scripts/compare_learning.sh [CONFIG] [STEPS] [SEEDS...]
#   defaults: configs/learning_weak_start.yaml 60 0 1
# Env: RLVLA3_BIN (default build/services/rl-vla3), OUT (default runs/compare),
# EVAL (default 400), FIRST (default 50).
set -euo pipefail
cd "$(dirname "$0")/.."
CONFIG=${1:-configs/learning_weak_start.yaml}
STEPS=${2:-60}
shift $(( $# > 2 ? 2 : $# )) || true
SEEDS=("$@")
[ ${#SEEDS[@]} -eq 0 ] && SEEDS=(0 1)
BIN=${RLVLA3_BIN:-build/services/rl-vla3}
OUT=${OUT:-runs/compare}
EVAL=${EVAL:-400}
FIRST=${FIRST:-450}  # the validation range (docs/training.md)
mkdir -p "$OUT"

if [ ! -f "$OUT/sft/checkpoint/model.safetensors" ]; then
  "$BIN" sft --config "$CONFIG" --set run.out_dir="$OUT" --set run.name=sft \
    --set threads.torch_intra_op="$(nproc)" --set metrics.progress=off |
    tee "$OUT/sft.txt"
fi
for mode in sync async; do
  for seed in "${SEEDS[@]}"; do
    name="${mode}_seed${seed}"
    echo "== $name: $STEPS optimizer steps"
    "$BIN" train --config "$CONFIG" --mode "$mode" \
      --init-checkpoint "$OUT/sft/checkpoint" --set run.out_dir="$OUT" \
      --set run.name="$name" --set run.seed="$seed" --set rl.resume=never \
      --set rl.max_steps="$STEPS" --set rl.duration_s=100000 \
      --set metrics.progress=off > "$OUT/$name.log" 2>&1
    grep -E "run: |success by start version" "$OUT/$name/summary.txt"
  done
done
greedy() {  # success % of checkpoint $1 over $EVAL held-out initial states
  # from FIRST; outcomes to $2
  "$BIN" eval --config "$CONFIG" --checkpoint "$1" --episodes "$EVAL" \
    --first-init "$FIRST" --outcomes "$2" \
    --set metrics.progress=off 2>"$2.err" | awk '$1 == "mean" { print $2 }' ||
    { cat "$2.err" >&2; exit 2; }
}
declare -A final
final[sft]=$(greedy "$OUT/sft/checkpoint" "$OUT/sft.outcomes")
for mode in sync async; do
  for seed in "${SEEDS[@]}"; do
    final[${mode}_seed${seed}]=$(greedy "$OUT/${mode}_seed${seed}/checkpoints/final" \
      "$OUT/${mode}_seed${seed}.outcomes")
  done
done

echo
echo "== success by start version (4 equal version ranges, % of episodes)"
printf "%-14s %8s %9s %9s %7s   %s\n" run "wall s" frames/s samples greedy \
  "v-range 1 .. 4 (sampled)"
printf "%-14s %8s %9s %9s %7s\n" sft "" "" "" "${final[sft]}"
for mode in sync async; do
  for seed in "${SEEDS[@]}"; do
    s="$OUT/${mode}_seed${seed}/summary.txt"
    wall=$(grep -oE "run: [0-9.]+ s" "$s" | grep -oE "[0-9.]+")
    fps=$(grep -oE "\(([0-9.]+) frames/s\)" "$s" | grep -oE "[0-9.]+")
    samples=$(grep -oE "[0-9]+ samples trained" "$s" | grep -oE "^[0-9]+")
    curve=$(grep "success by start version" "$s" | grep -oE " [0-9]+% \([0-9]+\)" |
      tr '\n' ' ')
    printf "%-14s %8s %9s %9s %7s  %s\n" "${mode}_seed${seed}" "$wall" "$fps" \
      "$samples" "${final[${mode}_seed${seed}]}" "$curve"
  done
done
for mode in sync async; do
  cat "$OUT/${mode}"_seed*/summary.txt | grep "success by start version" |
    grep -oE " [0-9]+% \([0-9]+\)" | awk -v m="$mode" -v n="${#SEEDS[@]}" '
      { gsub(/[%()]/, ""); i = (NR - 1) % 4; ok[i] += $1 * $2 / 100; ep[i] += $2 }
      END { printf "%-6s mean over %d seeds:", m, n;
            for (i = 0; i < 4; ++i) printf "  %.0f%% (%d ep)", 100 * ok[i] / ep[i], ep[i];
            printf "\n" }'
done
echo
echo "== greedy success, paired against the SFT start ($EVAL held-out states)"
for mode in sync async; do
  for seed in "${SEEDS[@]}"; do
    printf "%-14s " "${mode}_seed${seed}"
    python3 scripts/paired_mcnemar.py "$OUT/sft.outcomes" \
      "$OUT/${mode}_seed${seed}.outcomes"
  done
done
