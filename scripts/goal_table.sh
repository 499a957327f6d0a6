#!/usr/bin/env bash
# The goal table for one task: from one SFT start (START: its checkpoint), for
# each seed an async run of rl.duration_s, then a sync run stopped at the
# async run's number of updates; each judged greedily on the validation and
# the test range (EVAL states each), paired against the start
# (scripts/learning_run.sh). Prints one row per run and range: task, seed,
# mode, wall, updates, episodes, range, greedy before -> after, paired p.
#   scripts/goal_table.sh CONFIG START TASK [SEEDS...]   (default 0 1 2)
# Extra `--set` overrides (the recipe) come from RECIPE (a string).
set -euo pipefail
cd "$(dirname "$0")/.."
CONFIG=$1; START=$2; TASK=$3; shift 3
SEEDS=("$@")
[ ${#SEEDS[@]} -eq 0 ] && SEEDS=(0 1 2)
OUT=${OUT:-runs/goal}
RANGES=${RANGES:-validation test}
export OUT RANGES TASK
read -r -a recipe <<< "${RECIPE:-}"
row() {  # name mode seed
  local s="$OUT/$1/summary.txt" o="$OUT/$1.out"
  local wall eps upd line
  wall=$(grep -oE "run: [0-9.]+ s" "$s" | grep -oE "[0-9.]+")
  eps=$(grep -oE "[0-9]+ episodes" "$s" | head -1 | grep -oE "[0-9]+")
  upd=$(grep -oE "v[0-9]+-[0-9]+ @" "$s" | tail -1 | grep -oE "[0-9]+ @" | grep -oE "[0-9]+")
  for r in $RANGES; do
    line=$(grep -A1 " $r states" "$o" | grep "paired episodes" || true)
    printf "%-24s %4s %5s %7s %8s %8s %-10s %s\n" "$TASK" "$3" "$2" \
      "$wall" "$upd" "$eps" "$r" "${line#paired episodes }"
  done
}
for seed in "${SEEDS[@]}"; do
  a="${TASK}_async_s$seed"
  MODE=async bash scripts/learning_run.sh "$CONFIG" "$START" "$a" \
    --set run.seed="$seed" "${recipe[@]}" > "$OUT/$a.out"
  last=$(grep -oE "v[0-9]+-[0-9]+ @" "$OUT/$a/summary.txt" | tail -1 |
    grep -oE "\-[0-9]+" | tr -d -)
  first=$(grep -oE "v[0-9]+-[0-9]+ @" "$OUT/$a/summary.txt" | head -1 |
    grep -oE "v[0-9]+" | tr -d v)
  y="${TASK}_sync_s$seed"
  MODE=sync bash scripts/learning_run.sh "$CONFIG" "$START" "$y" \
    --set run.seed="$seed" "${recipe[@]}" \
    --set rl.max_steps=$((last - first)) --set rl.duration_s=100000 > "$OUT/$y.out"
done
echo "task                     seed  mode   wall s  updates episodes range      greedy before -> after"
for seed in "${SEEDS[@]}"; do
  row "${TASK}_async_s$seed" async "$seed"
  row "${TASK}_sync_s$seed" sync "$seed"
done
