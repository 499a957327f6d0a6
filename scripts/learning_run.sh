#!/usr/bin/env bash
# One RL run from an SFT checkpoint, judged on held-out initial states: train,
# then evaluate the final checkpoint greedily on EVAL states from FIRST (the
# same states as the start's evaluation) and pair it with the start's
# outcomes (McNemar). Issue 48's screening and goal-table runs.
#   scripts/learning_run.sh CONFIG SFT_DIR NAME [--set k=v ...]
# Env: RLVLA3_BIN (build/services/rl-vla3), OUT (runs/s48), EVAL (400),
# FIRST (50), MODE (async), START_OUTCOMES (the SFT checkpoint's, made once),
# EVAL_SET (extra --set k=v for both evaluations: the eval horizon).
set -euo pipefail
cd "$(dirname "$0")/.."
CONFIG=$1; SFT=$2; NAME=$3; shift 3
BIN=${RLVLA3_BIN:-build/services/rl-vla3}
OUT=${OUT:-runs/s48}
EVAL=${EVAL:-400}
FIRST=${FIRST:-50}
MODE=${MODE:-async}
read -r -a eval_set <<< "${EVAL_SET:-}"
mkdir -p "$OUT"
start_outcomes=${START_OUTCOMES:-$SFT.outcomes.$FIRST.$EVAL}
evaluate() {  # checkpoint, outcomes file, [actions]
  "$BIN" eval --config "$CONFIG" --checkpoint "$1" --episodes "$EVAL" \
    --first-init "$FIRST" --outcomes "$2" --actions "${3:-greedy}" \
    --set metrics.progress=off "${eval_set[@]}" 2>/dev/null | awk '$1 == "mean" { print $2 }'
}
[ -f "$start_outcomes" ] || evaluate "$SFT" "$start_outcomes" > /dev/null
t0=$(date +%s)
"$BIN" train --config "$CONFIG" --mode "$MODE" --init-checkpoint "$SFT" \
  --set run.out_dir="$OUT" --set run.name="$NAME" --set rl.resume=never \
  --set metrics.progress=off "$@" > "$OUT/$NAME.log" 2>&1
t1=$(date +%s)
after=$(evaluate "$OUT/$NAME/checkpoints/final" "$OUT/$NAME.outcomes")
grep -E "run: |success by start version" "$OUT/$NAME/summary.txt" || true
echo "== $NAME ($MODE): train $((t1 - t0)) s; greedy on $EVAL held-out states from $FIRST: $after"
/usr/bin/python3 scripts/paired_mcnemar.py "$start_outcomes" "$OUT/$NAME.outcomes"
