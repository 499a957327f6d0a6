#!/usr/bin/env bash
# The local demo, from a fresh Debian 12 machine: installs what is missing,
# builds rl-vla3 (Release), then
#   1. runs the runtime self-check (envs -> request queue -> dynamic batcher ->
#      LibTorch policy -> replies),
#   2. measures the scripted experts on all 12 MuJoCo tasks,
#   3. records one expert episode as a GIF,
# and ends with a summary.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "${JOBS:-$(nproc)}" --target rl-vla3
BIN=./build/services/rl-vla3
OUT=${RLVLA3_DEMO_OUT:-runs/demo}
mkdir -p "$OUT"

echo "== 1/3 runtime self-check"
$BIN selfcheck --config configs/selfcheck.yaml "$@" | tee "$OUT/selfcheck.txt"
echo "== 2/3 scripted experts on the 12-task MuJoCo suite (10 initial states each)"
$BIN expert-eval --episodes 10 --set threads.env_workers="$(nproc)" | tee "$OUT/experts.txt"
echo "== 3/3 one expert episode, both cameras, as a GIF"
$BIN rollout-video --task stack_green_cube_on_red_cube --init 2 --out "$OUT/stack.gif" \
  | tee "$OUT/video.txt"

echo
echo "== demo summary"
grep -E "^self-check" "$OUT/selfcheck.txt"
grep -E "^  env frames/s" "$OUT/selfcheck.txt" | sed 's/^ */self-check /'
grep -E "^mean" "$OUT/experts.txt" | awk '{print "scripted-expert mean success over 12 tasks: " $2}'
cat "$OUT/video.txt"
echo "outputs in $OUT/ (open $OUT/stack.gif to watch the arm)"
