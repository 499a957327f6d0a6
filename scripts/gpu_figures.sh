#!/usr/bin/env bash
# The GPU issue's figures on the `device` machine (one H100 + 16 cores), CPU and GPU side by side.
# Each phase fits one call (10 min at most); the machine stays warm for 30 s between calls:
#   carry: [".device"]   command: bash scripts/gpu_figures.sh            (all four, ~9 min)
#                        command: bash scripts/gpu_figures.sh build test (~2 + ~2 min)
# build: ../shared/device's kit (run its prepare.sh here first; it makes .device/) unpacks
#   the packages and writes .device/env.sh; its own configure is stopped there, the wheel's
#   bundled fmt and protobuf headers (which the kit moves aside) are put back, and the
#   project's CMake builds against the wheel as it comes (cmake/RlVla3TorchWheel.cmake).
# figures: inference obs/s at batch 8/64/256 and learner samples/s at 64, 1.44 M and 106 M
#   parameters, the CPU with 16 threads in fp32, the GPU in bf16.
# bench: bench_cpu and bench_libero_latency with both roles on the CPU, then on the GPU at
#   1.44 M and 106 M parameters (BENCH_SECONDS per mode, default 20; nvidia-smi sampled
#   beside each run as a check on report.html's NVML figure).
# DEADLINE_S (default 570): phases and benches that would start too late are skipped.
# Logs, JSON and the benches' report.html go to $OUT/gpu_figures.tgz (default runs/).
set -uo pipefail
# The device tool brings back only a few files: everything is written to a work
# folder and packed into $OUT/gpu_figures.tgz on exit.
FINAL_OUT="${OUT:-runs/gpu_figures}"
mkdir -p "$FINAL_OUT"
OUT=$(mktemp -d)
trap 'tar czf "$FINAL_OUT/gpu_figures.tgz" -C "$OUT" .' EXIT
B=/tmp/build-gpu
START=$(date +%s)
left() { echo $(( ${DEADLINE_S:-570} - ($(date +%s) - START) )); }
SECONDS_PER_MODE=${BENCH_SECONDS:-20}
phases=("$@")
[ ${#phases[@]} -eq 0 ] && phases=(build test figures bench)
GPU=(--set inference.device=cuda --set learner.device=cuda --set inference.precision=bf16
     --set learner.precision=bf16)
BIG=(--set policy.d_model=768 --set policy.heads=12 --set policy.layers=14)

bench() {  # NAME CONFIG ARGS...
  local name=$1 cfg=$2; shift 2
  local cap=$(( 4 * SECONDS_PER_MODE + 30 ))
  if [ "$(left)" -lt "$cap" ]; then echo "== $name skipped ($(left) s left)"; return; fi
  nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv -lms 500 \
    >"$OUT/nvidia_smi_$name.csv" 2>/dev/null &
  local smi=$!
  timeout "$cap" "$B/services/rl-vla3" bench --config "configs/$cfg.yaml" \
    --duration "$SECONDS_PER_MODE" --set run.out_dir="$OUT/runs" --set run.name="$name" "$@" \
    --json "$OUT/bench_$name.json" >"$OUT/bench_$name.txt" 2>&1
  local rc=$?
  kill "$smi" 2>/dev/null
  echo "== $name (exit $rc)"; grep -E "^rl-vla3 bench|^devices|^stages|async|sync|bottleneck|GPU busy" \
    "$OUT/bench_$name.txt" | head -14
}

for phase in "${phases[@]}"; do
  case "$phase" in
    build)
      rm -rf /tmp/build-kit-probe
      BUILD=/tmp/build-kit-probe bash .device/build.sh -DCMAKE_TOOLCHAIN_FILE=/nonexistent.cmake \
        >"$OUT/kit.log" 2>&1
      TP=$(python3 -c "import torch,os;print(os.path.dirname(torch.__file__))")
      for d in fmt google; do
        if [ -d "$TP/include/$d.wheel" ] && [ ! -e "$TP/include/$d" ]; then
          mv "$TP/include/$d.wheel" "$TP/include/$d"
        fi
      done
      echo "wheel include/: $(ls "$TP/include" | tr '\n' ' ')"
      source .device/env.sh; export RLVLA3_BUILD=$B
      t0=$(date +%s)
      cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=/usr/bin/g++ \
        -DCMAKE_PREFIX_PATH="/opt/deps/usr;$TP/share/cmake" -DCMAKE_POLICY_VERSION_MINIMUM=3.5 \
        -DRLVLA3_WITH_CUDA=ON -DRLVLA3_WITH_NCCL=ON >"$OUT/configure.log" 2>&1 ||
        { tail -30 "$OUT/configure.log"; exit 1; }
      timeout 300 cmake --build "$B" -j "$(nproc)" -- -k 0 >"$OUT/build.log" 2>&1
      rc=$?
      echo "build against the wheel as it comes: exit $rc in $(( $(date +%s) - t0 )) s"
      [ $rc -ne 0 ] && grep -E "error|FAILED" "$OUT/build.log" | head -40 ;;
    test)
      source .device/env.sh
      nvidia-smi >"$OUT/nvidia-smi.txt" 2>&1
      t0=$(date +%s)
      (cd "$B" && timeout 240 ctest -j16 --timeout 200 --output-on-failure) >"$OUT/ctest.log" 2>&1
      echo "ctest in $(( $(date +%s) - t0 )) s"
      grep -E "tests passed|tests failed|\(Failed\)|\(SEGFAULT\)|\(Timeout\)|Skipped\)|\*\*\*" \
        "$OUT/ctest.log" | tail -40 ;;
    figures)
      source .device/env.sh
      t0=$(date +%s)
      { timeout 60 "$B/bench/device_figures" --devices cuda --sizes 1,100 --batches 8,64,256 \
          --threads 16 --seconds 2 --json "$OUT/device_figures_gpu.jsonl"
        timeout 40 "$B/bench/device_figures" --devices cpu --sizes 1 --batches 8,64,256 \
          --threads 16 --seconds 2 --json "$OUT/device_figures_cpu_small.jsonl"
        timeout 70 "$B/bench/device_figures" --devices cpu --sizes 100 --batches 8,64 \
          --learner-batch 8 --threads 16 --seconds 2 --json "$OUT/device_figures_cpu_big.jsonl"
      } 2>&1 | tee "$OUT/device_figures.txt"
      echo "figures in $(( $(date +%s) - t0 )) s" ;;
    bench)
      source .device/env.sh
      for cfg in bench_cpu bench_libero_latency; do
        bench "${cfg}_cpu" "$cfg"
        bench "${cfg}_gpu_small" "$cfg" "${GPU[@]}"
        bench "${cfg}_gpu_big" "$cfg" "${GPU[@]}" "${BIG[@]}"
      done ;;
    *) echo "gpu_figures: unknown phase $phase (build, test, figures, bench)"; exit 2 ;;
  esac
done
