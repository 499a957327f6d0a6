#!/usr/bin/env bash
# The demo-count rule: the smallest number of expert demos per task whose SFT
# policy starts RL at 15-35% greedy success on the validation range (a
# choice: never the test range). For each count in COUNTS: `rl-vla3 sft`
# (sft.demos_per_task = count, the config's epochs and demo states) on TASK,
# then greedy eval of TASK on EVAL validation states; prints each count's
# success and the first in the band.
#   scripts/demo_count.sh CONFIG TASK [COUNTS...]    (default 10 20 40 80)
# Env: RLVLA3_BIN (build/services/rl-vla3), OUT (runs/demo_count), EVAL (400),
# LOW (15), HIGH (35), EVAL_SET (extra --set k=v for eval: the eval horizon),
# SFT_SET (extra --set k=v for sft), FIRST_IN_BAND (1: stop at the first
# count in the band).
set -euo pipefail
cd "$(dirname "$0")/.."
CONFIG=$1; TASK=$2; shift 2
COUNTS=("$@")
[ ${#COUNTS[@]} -eq 0 ] && COUNTS=(10 20 40 80)
BIN=${RLVLA3_BIN:-build/services/rl-vla3}
OUT=${OUT:-runs/demo_count}
EVAL=${EVAL:-400}; LOW=${LOW:-15}; HIGH=${HIGH:-35}
read -r -a eval_set <<< "${EVAL_SET:-}"
read -r -a sft_set <<< "${SFT_SET:-}"
mkdir -p "$OUT"
chosen=""
for n in "${COUNTS[@]}"; do
  name="sft_${TASK}_${n}"
  "$BIN" sft --config "$CONFIG" --set sft.tasks="$TASK" --set env.tasks="$TASK" \
    --set sft.demos_per_task="$n" --set run.out_dir="$OUT" --set run.name="$name" \
    --set metrics.progress=off "${sft_set[@]}" > "$OUT/$name.log" 2>&1
  ck="$OUT/$name/checkpoint"
  pct=$("$BIN" eval --config "$CONFIG" --checkpoint "$ck" --range validation \
    --episodes "$EVAL" --outcomes "$ck.outcomes.validation.$EVAL" \
    --task "$TASK" --set metrics.progress=off "${eval_set[@]}" \
    2>"$OUT/$name.eval.err" | awk '$1 == "mean" { print $2 }') ||
    { cat "$OUT/$name.eval.err" >&2; exit 2; }
  echo "$TASK: $n demos -> greedy $pct on $EVAL validation states ($ck)"
  v=${pct%\%}
  if [ -z "$chosen" ] && awk -v v="$v" -v lo="$LOW" -v hi="$HIGH" \
      'BEGIN { exit !(v >= lo && v <= hi) }'; then
    chosen=$n
    [ "${FIRST_IN_BAND:-0}" = 1 ] && break
  fi
done
echo "demo-count rule ($LOW-$HIGH% greedy): ${chosen:-none of ${COUNTS[*]}} for $TASK"
