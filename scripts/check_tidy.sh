#!/usr/bin/env bash
# clang-tidy with the project's .clang-tidy (function size <= 80 lines, Google
# naming) over the project's sources, from build/compile_commands.json.
#   scripts/check_tidy.sh                 every .cc of runtime/ envs/ policies/ services/
#   scripts/check_tidy.sh FILE.cc ...     just these
# Parsing LibTorch's headers makes a full run take ~30 min on 2 cores, so
# scripts/test.sh runs scripts/check_sizes.py (the size rules, in a second)
# and this script is for a change's own files and for machines with cores.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v clang-tidy >/dev/null; then
  echo "check_tidy: clang-tidy not found (apt-get install clang-tidy)" >&2
  exit 1
fi
if [ ! -f build/compile_commands.json ]; then
  echo "check_tidy: build/compile_commands.json missing: configure first" \
       "(cmake -S . -B build -G Ninja)" >&2
  exit 1
fi
if [ $# -gt 0 ]; then
  files=("$@")
else
  mapfile -t files < <(git ls-files 'runtime/*.cc' 'envs/*.cc' 'policies/*.cc' \
                                    'services/*.cc')
fi
# GCC-only flags in the compile database that clang does not know.
extra=(--extra-arg=-Wno-unknown-warning-option --extra-arg=-Wno-ignored-optimization-argument)
status=0
printf '%s\n' "${files[@]}" | \
  xargs -P "${JOBS:-$(nproc)}" -n 1 clang-tidy -p build --quiet "${extra[@]}" \
  || status=$?
if [ $status -ne 0 ]; then
  echo "check_tidy: clang-tidy found what .clang-tidy forbids (above)" >&2
  exit 1
fi
echo "check_tidy: ${#files[@]} files pass .clang-tidy"
