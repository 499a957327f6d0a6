#!/usr/bin/env bash
# Regenerates the Python client's gRPC stubs (services/python/rlvla3/v1,
# services/python/rlvla3_health) from proto/, with Debian's protoc and
# grpc_python_plugin (protobuf-compiler-grpc). They are committed so that
# `pip install ./services/python` needs no C++ build; ctest's
# PythonClient.StubsMatchTheProtos fails when they fall behind proto/.
#   bash scripts/gen_python_stubs.sh [OUT_DIR]   (default services/python)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-services/python}
plugin=$(command -v grpc_python_plugin)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/rlvla3_health" "$out/rlvla3/v1" "$out/rlvla3_health"
cp proto/grpc/health/v1/health.proto "$work/rlvla3_health/health.proto"
protoc --proto_path=proto --python_out="$out" --grpc_python_out="$out" \
  --plugin=protoc-gen-grpc_python="$plugin" \
  rlvla3/v1/tensor.proto rlvla3/v1/rollout.proto rlvla3/v1/services.proto
protoc --proto_path="$work" --python_out="$out" --grpc_python_out="$out" \
  --plugin=protoc-gen-grpc_python="$plugin" rlvla3_health/health.proto
