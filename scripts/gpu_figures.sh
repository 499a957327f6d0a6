#!/usr/bin/env bash
# The GPU issue's figures on the `device` machine (one H100 + 16 cores), CPU and GPU side by side.
# Each phase fits one call (10 min at most); the machine stays warm for 30 s between calls:
#   carry: [".device"]   command: bash scripts/gpu_figures.sh            (all four, ~9 min)
#                        command: bash scripts/gpu_figures.sh build test (~2 + ~2 min)
# build: ../shared/device's kit (run its prepare.sh here first; it makes .device/) unpacks
#   the packages and writes .device/env.sh; its own configure is stopped there, the wheel's
#   bundled fmt and protobuf headers (which the kit moves aside) are put back, and the
#   project's CMake builds against the wheel as it comes (cmake/RlVla3TorchWheel.cmake).
# anchor: bench/anchor/compare.py on the GPU (d128x2, d512x8, d768x14; batch 8/64/256, learner
#   64) and on the CPU (d128x2), the plain-PyTorch anchor and C++ interleaved, medians of 2.
# profile: bench --profile on the GPU at 1.44 M and 106 M (Chrome traces, kernels per batch).
# figures: inference obs/s at batch 8/64/256 and learner samples/s at 64, 1.44 M and 106 M
#   parameters, the CPU with 16 threads in fp32, the GPU in bf16.
# bench: bench_cpu and bench_libero_latency with both roles on the CPU, then on the GPU at
#   1.44 M and 106 M parameters (BENCH_SECONDS per mode, default 20; nvidia-smi sampled
#   beside each run as a check on report.html's NVML figure).
# envtest, envscale, placement, node (issue 28, one node): the env tests on NVIDIA's EGL; the
#   env stage alone at 1..12 workers per backend, batched readback on and off (SWEEP_S s per
#   point; carry .device-mesa too for Mesa; envscale_each: env.readback per_image);
#   bench_libero_latency with --placement processes; bench_node on the fastest env setting
#   measured, and in the rollout-processes shape. One call for issue 28:
#     DEADLINE_S=560 bash scripts/gpu_figures.sh build envtest envscale placement node envprocs \
#       envscale_each
# envprocs: the env stage alone as N processes of one worker each (PROC_COUNTS), summed.
# nodeproc: configs/bench_node.yaml as shipped, --placement processes.
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
  local cap=${BENCH_CAP:-$(( 4 * SECONDS_PER_MODE + 30 ))}
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

# The env stage alone at 1..12 workers (issue 28's table): GL = nvidia or mesa
# (.device/env.sh's EGL vendor; mesa needs .device-mesa carried), BACKEND =
# gpu or mesa, READBACK = env.readback (batched, per_image).
sweep() {  # NAME GL BACKEND READBACK
  local name=$1
  if [ "$(left)" -lt 40 ]; then echo "== envscale $name skipped ($(left) s left)"; return; fi
  ( export RLVLA3_GL=$2; source .device/env.sh
    timeout 150 "$B/services/rl-vla3" bench --config configs/bench_cpu.yaml \
      --env-workers "${SWEEP_WORKERS:-1,2,4,8,12}" --duration "${SWEEP_S:-3}" \
      --set env.render_backend="$3" --set env.readback="$4" \
      --set run.out_dir="$OUT/runs" --set run.name="envscale_$name" \
      --json "$OUT/envscale_$name.json" >"$OUT/envscale_$name.txt" 2>&1 )
  echo "== envscale $name (exit $?)"; grep -A7 "^workers" "$OUT/envscale_$name.txt"
}

# The env stage alone as N processes of one worker each (threads vs processes):
# their frames/s summed, for N in PROC_COUNTS.
env_processes() {  # GL BACKEND
  local gl=$1 backend=$2 n i
  for n in ${PROC_COUNTS:-2 4 8 12}; do
    if [ "$(left)" -lt 30 ]; then echo "== envprocs skipped ($(left) s left)"; return; fi
    ( export RLVLA3_GL=$gl; source .device/env.sh
      for i in $(seq 1 "$n"); do
        timeout 60 "$B/services/rl-vla3" bench --config configs/bench_cpu.yaml --env-workers 1 \
          --duration "${SWEEP_S:-3}" --set env.render_backend="$backend" \
          --set run.out_dir="$OUT/runs" --set run.name="envprocs_${backend}_${n}_$i" \
          --json "$OUT/envprocs_${backend}_${n}_$i.json" >"$OUT/envprocs_${backend}_${n}_$i.txt" 2>&1 &
      done
      wait )
    python3 - "$OUT" "$backend" "$n" <<'PY'
import glob, json, sys
out, backend, n = sys.argv[1:]
pts = [json.load(open(f))["points"][0] for f in glob.glob(f"{out}/envprocs_{backend}_{n}_*.json")]
fps = sum(p["frames_per_s"] for p in pts)
cpu = sum(p["cpu_ms_per_frame"] * p["frames_per_s"] for p in pts) / max(fps, 1e-9)
print(f"envprocs {backend}: {n} processes x 1 worker x 8 envs: {len(pts)} reported, "
      f"{fps:.0f} frames/s together, CPU {cpu:.2f} ms/frame")
PY
  done
}

# The fastest batched sweep point: "GL BACKEND WORKERS".
best_env_point() {
  python3 - "$OUT" <<'PY'
import json, os, sys
best = ("nvidia", "gpu", 2, 0.0)
for gl, backend in (("nvidia", "gpu"), ("mesa", "mesa")):
    path = os.path.join(sys.argv[1], f"envscale_{backend}_batched.json")
    if not os.path.exists(path):
        continue
    for p in json.load(open(path))["points"]:
        if p["frames_per_s"] > best[3]:
            best = (gl, backend, p["workers"], p["frames_per_s"])
print(best[0], best[1], best[2])
PY
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
    anchor)  # issue 40: C++ vs the plain-PyTorch anchor, same checkpoint and work
      source .device/env.sh
      t0=$(date +%s)
      timeout "${ANCHOR_S:-300}" python3 bench/anchor/compare.py --same-work "$B/bench/same_work" \
        --python python3 --device cuda --sizes "${ANCHOR_SIZES:-128x2x4,512x8x8,768x14x12}" \
        --batches 8,64,256 --learner-batch 64 --seconds "${ANCHOR_SECONDS:-1.5}" --repeats 2 \
        --threads 16 --out "$OUT/anchor_gpu" 2>&1 | tee "$OUT/anchor_gpu.txt"
      # Host syncs per optimizer step of the multi-pass learner (2 epochs x 2 minibatches).
      timeout 60 "$B/bench/same_work" time "$OUT/anchor_gpu/d128x2" --device cuda --batches 64 \
        --learner-batch 64 --epochs 2 --minibatches 2 --seconds 2 --threads 16 2>&1 \
        | tee -a "$OUT/anchor_gpu.txt"
      timeout 120 python3 bench/anchor/compare.py --same-work "$B/bench/same_work" \
        --python python3 --device cpu --sizes 128x2x4 --batches 8,64 --learner-batch 64 \
        --seconds 1.5 --repeats 2 --threads 16 --out "$OUT/anchor_cpu" 2>&1 | tee "$OUT/anchor_cpu.txt"
      echo "anchor in $(( $(date +%s) - t0 )) s" ;;
    profile)  # issue 40: bench --profile's trace and kernel counts, GPU small and big
      source .device/env.sh
      SECONDS_PER_MODE=${PROFILE_SECONDS:-6} bench profile_gpu_small bench_cpu "${GPU[@]}" --profile
      SECONDS_PER_MODE=${PROFILE_SECONDS:-6} bench profile_gpu_big bench_cpu "${GPU[@]}" "${BIG[@]}" \
        --profile
      grep -h -A1 "^profile" "$OUT"/bench_profile_gpu_*.txt ;;
    bench)
      source .device/env.sh
      for cfg in bench_cpu bench_libero_latency; do
        bench "${cfg}_cpu" "$cfg"
        bench "${cfg}_gpu_small" "$cfg" "${GPU[@]}"
        bench "${cfg}_gpu_big" "$cfg" "${GPU[@]}" "${BIG[@]}"
      done ;;
    envtest)  # the env pool's and renderer's tests on NVIDIA's EGL (batched readback)
      source .device/env.sh
      (cd "$B" && timeout "${ENVTEST_S:-90}" ctest -L envs -j8 --output-on-failure) \
        >"$OUT/envtest.log" 2>&1
      grep -E "tests passed|tests failed|\(Failed\)|Skipped\)" "$OUT/envtest.log" ;;
    envscale)
      sweep gpu_batched nvidia gpu batched
      sweep mesa_batched mesa mesa batched ;;
    nodeproc)  # bench_node as shipped: rollout processes (issue 28's node bench)
      source .device/env.sh
      SECONDS_PER_MODE=${NODE_SECONDS:-12} BENCH_CAP=${NODE_CAP:-150} bench node_processes \
        bench_node \
        --placement processes
      sed -n '/^across processes/,/^processes:/p' "$OUT/bench_node_processes.txt" ;;
    envprocs)  # the env stage as processes of one worker each, both backends
      env_processes nvidia gpu
      env_processes mesa mesa ;;
    envscale_each)  # one readback per image, as before batched readback
      sweep gpu_each nvidia gpu per_image
      sweep mesa_each mesa mesa per_image ;;
    placement)  # issue 28: processes vs one process, bench_libero_latency
      source .device/env.sh
      SECONDS_PER_MODE=${PLACEMENT_SECONDS:-15} BENCH_CAP=140 bench placement bench_libero_latency \
        --placement processes
      grep -E "processes" "$OUT/bench_placement.txt" | head -6 ;;
    node)  # bench_node on the fastest env setting the sweeps measured
      read -r gl backend workers <<<"$(best_env_point)"
      echo "bench_node: GL $gl, env.render_backend $backend, $workers env workers"
      ( export RLVLA3_GL=$gl; source .device/env.sh
        SECONDS_PER_MODE=${NODE_SECONDS:-12} bench node bench_node \
          --set env.render_backend="$backend" --set threads.env_workers="$workers" )
      ( source .device/env.sh
        SECONDS_PER_MODE=${NODE_SECONDS:-12} BENCH_CAP=120 bench node_rollout_processes bench_node \
          --placement processes --set cluster.rollout_workers=4 --set env.num_envs=16 \
          --set threads.env_workers=2 )
      grep -E "processes" "$OUT/bench_node_rollout_processes.txt" | head -6 ;;
    *) echo "gpu_figures: unknown phase $phase (build, test, figures, bench, envtest," \
         "envscale, placement, node, nodeproc, envprocs, envscale_each)"; exit 2 ;;
  esac
done
