#!/usr/bin/env bash
# The full test suite, from a fresh Debian 12 machine: installs what is missing,
# checks formatting, builds (Release) and runs every ctest test, then rebuilds
# the concurrency, engine and role tests under ThreadSanitizer and runs them.
#   scripts/test.sh            everything
#   RLVLA3_SKIP_TSAN=1 ...     skip the TSan pass
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
JOBS=${JOBS:-$(nproc)}

bash scripts/install_deps.sh
bash scripts/check_format.sh
bash scripts/check_layers.sh
# Files <= 500 lines, functions <= 80 (the full .clang-tidy: scripts/check_tidy.sh).
python3 scripts/check_sizes.py

# The learner's NCCL backend compiles and links wherever the CUDA toolkit with
# NCCL is (no GPU needed; its test runs on a GPU, else checks the error).
NCCL=OFF
if [ -f /usr/local/cuda/include/nccl.h ]; then NCCL=ON; fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DRLVLA3_WITH_NCCL=$NCCL
cmake --build build -j "$JOBS"
ctest --test-dir build --output-on-failure -j "$JOBS"

if [ "${RLVLA3_SKIP_TSAN:-0}" != "1" ]; then
  cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DRLVLA3_SANITIZER=thread -DRLVLA3_BUILD_BENCHMARKS=OFF
  # The queue, channel, engine and role tests (ctest label `tsan`).
  cmake --build build-tsan -j "$JOBS" --target bounded_queue_test \
    dynamic_batcher_test supervisor_test channels_test admission_gate_test \
    weight_store_test advantages_test ppo_loss_test learner_test engine_test
  TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/tests/tsan.supp" \
    ctest --test-dir build-tsan --output-on-failure -L tsan
fi
echo "scripts/test.sh: all tests passed in $(( $(date +%s) - start )) s"
