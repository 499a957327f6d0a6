#!/usr/bin/env bash
# One RL run from an SFT checkpoint, judged on named held-out ranges of
# initial states: train, then evaluate the final checkpoint greedily on each
# range in RANGES (the same states as the start's evaluation) and pair it
# with the start's outcomes (McNemar). Screening runs use the validation
# range only; the final table adds the test range (docs/training.md).
#   scripts/learning_run.sh CONFIG SFT_DIR NAME [--set k=v ...]
# Env: RLVLA3_BIN (build/services/rl-vla3), OUT (runs/s59), EVAL (400),
# RANGES ("validation"; "validation test" for the final table), TASK (the
# task to train, env.tasks, and evaluate, --task, when not the config's),
# MODE (async),
# EVAL_SET (extra --set k=v for both evaluations: the eval horizon).
set -euo pipefail
cd "$(dirname "$0")/.."
CONFIG=$1; SFT=$2; NAME=$3; shift 3
BIN=${RLVLA3_BIN:-build/services/rl-vla3}
OUT=${OUT:-runs/s59}
EVAL=${EVAL:-400}
MODE=${MODE:-async}
read -r -a ranges <<< "${RANGES:-validation}"
read -r -a eval_set <<< "${EVAL_SET:-}"
train_task=(); eval_task=()
if [ -n "${TASK:-}" ]; then
  train_task=(--set env.tasks="$TASK")
  eval_task=(--task "$TASK")
fi
mkdir -p "$OUT"
evaluate() {  # checkpoint, range, outcomes file
  "$BIN" eval --config "$CONFIG" --checkpoint "$1" --range "$2" \
    --episodes "$EVAL" --outcomes "$3" --set metrics.progress=off \
    "${eval_task[@]}" "${eval_set[@]}" 2>"$3.err" | awk '$1 == "mean" { print $2 }' ||
    { cat "$3.err" >&2; exit 2; }
}
for r in "${ranges[@]}"; do
  start="$SFT.outcomes.$r.$EVAL"
  [ -f "$start" ] || evaluate "$SFT" "$r" "$start" > /dev/null
done
t0=$(date +%s)
"$BIN" train --config "$CONFIG" --mode "$MODE" --init-checkpoint "$SFT" \
  --set run.out_dir="$OUT" --set run.name="$NAME" --set rl.resume=never \
  --set metrics.progress=off "${train_task[@]}" "$@" > "$OUT/$NAME.log" 2>&1
t1=$(date +%s)
grep -E "run: |success by start version" "$OUT/$NAME/summary.txt" || true
for r in "${ranges[@]}"; do
  after=$(evaluate "$OUT/$NAME/checkpoints/final" "$r" "$OUT/$NAME.outcomes.$r")
  echo "== $NAME ($MODE): train $((t1 - t0)) s; greedy on $EVAL $r states: $after"
  /usr/bin/python3 scripts/paired_mcnemar.py "$SFT.outcomes.$r.$EVAL" \
    "$OUT/$NAME.outcomes.$r"
done
