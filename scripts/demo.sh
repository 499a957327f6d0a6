#!/usr/bin/env bash
# The local demo, from a fresh Debian 12 machine: installs what is missing,
# builds rl-vla3 (Release) and runs the demo verb, which ends with a summary.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "${JOBS:-$(nproc)}" --target rl-vla3
exec ./build/services/rl-vla3 selfcheck --config configs/selfcheck.yaml "$@"
