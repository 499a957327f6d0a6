#!/usr/bin/env bash
# The GPU issue's figures on the `device` machine (one H100 + 16 cores), CPU and GPU side by side.
# Each phase fits one call (10 min at most); the machine stays warm for 30 s between calls:
#   carry: [".device"]   command: bash scripts/gpu_figures.sh build test      (~2 + ~5 min)
#                        command: bash scripts/gpu_figures.sh figures         (device_figures)
#                        command: bash scripts/gpu_figures.sh bench           (rl-vla3 bench)
# build: ../shared/device's kit (run its prepare.sh here first; it makes .device/).
# figures: inference obs/s at batch 8/64/256 and learner samples/s at 64, 1.44 M and 106 M
#   parameters, the CPU with 16 threads in fp32, the GPU in bf16.
# bench: bench_cpu and bench_libero_latency with both roles on the CPU, then on the GPU at
#   1.44 M and 106 M parameters.
# Logs and JSON go to $OUT (default runs/gpu_figures).
set -uo pipefail
OUT="${OUT:-runs/gpu_figures}"
mkdir -p "$OUT"
phases=("$@")
[ ${#phases[@]} -eq 0 ] && phases=(build test figures bench)
GPU=(--set inference.device=cuda --set learner.device=cuda --set inference.precision=bf16
     --set learner.precision=bf16)
BIG=(--set policy.d_model=768 --set policy.heads=12 --set policy.layers=14)

bench() {  # NAME CONFIG ARGS...
  local name=$1 cfg=$2; shift 2
  timeout 280 "$B/services/rl-vla3" bench --config "configs/$cfg.yaml" --duration 20 "$@" \
    --json "$OUT/bench_$name.json" >"$OUT/bench_$name.txt" 2>&1
  echo "== $name (exit $?)"; grep -E "^rl-vla3 bench|^devices|^stages|async|sync|bottleneck" \
    "$OUT/bench_$name.txt" | head -12
}

for phase in "${phases[@]}"; do
  case "$phase" in
    build)
      bash .device/build.sh >"$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
      tail -3 "$OUT/build.log" ;;
    test)
      source .device/env.sh; B="${RLVLA3_BUILD:-/tmp/build-gpu}"
      nvidia-smi >"$OUT/nvidia-smi.txt" 2>&1
      (cd "$B" && ctest -j8 --timeout 300 --output-on-failure) >"$OUT/ctest.log" 2>&1
      grep -E "tests passed|tests failed|\(Failed\)|\(SEGFAULT\)|Skipped\)" "$OUT/ctest.log" | tail -20 ;;
    figures)
      source .device/env.sh; B="${RLVLA3_BUILD:-/tmp/build-gpu}"
      "$B/bench/device_figures" --devices cuda,cpu --sizes 1,100 --batches 8,64,256 \
        --threads 16 --seconds 3 --json "$OUT/device_figures.jsonl" 2>&1 |
        tee "$OUT/device_figures.txt" ;;
    bench)
      source .device/env.sh; B="${RLVLA3_BUILD:-/tmp/build-gpu}"
      for cfg in bench_cpu bench_libero_latency; do
        bench "${cfg}_cpu" "$cfg"
        bench "${cfg}_gpu_small" "$cfg" "${GPU[@]}"
        bench "${cfg}_gpu_big" "$cfg" "${GPU[@]}" "${BIG[@]}"
      done ;;
    *) echo "gpu_figures: unknown phase $phase (build, test, figures, bench)"; exit 2 ;;
  esac
done
