#!/usr/bin/env bash
# Installs every Debian 12 package rl-vla3 needs, only when something is missing.
# Idempotent; runs apt-get as root, or through sudo when not root.
set -euo pipefail

PACKAGES=(
  # toolchain
  cmake ninja-build ccache g++ clang clang-format libclang-rt-14-dev pkg-config
  # rpc + wire format
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
  # learner / policies
  libtorch-dev libgloo-dev
  # a policy's own SentencePiece tokenizer (policies/sentencepiece_model.cc); the
  # examples train a tiny model with Python's sentencepiece
  libsentencepiece-dev python3-sentencepiece
  # heap allocator linked into every executable (cmake/RlVla3Allocator.cmake)
  libgoogle-perftools-dev
  # Debian's libtorch calls the system BLAS (libblas.so.3 alternative): OpenBLAS built
  # with OpenMP makes Linear layers ~15x faster than reference BLAS and follows
  # LibTorch's intra-op thread count.
  libopenblas0-openmp
  # simulation + headless rendering (EGL surfaceless on Mesa llvmpipe)
  # (libopengl-dev: libOpenGL.so, which find_package(OpenGL COMPONENTS OpenGL) needs;
  # a fresh Debian 12 lacks it: found building the image from debian:12)
  libmujoco-dev libqhull-dev libgl-dev libopengl-dev libegl-dev libegl-mesa0 libgl1-mesa-dri
  libpng-dev
  # runtime core
  libconcurrentqueue-dev libabsl-dev libspdlog-dev libfmt-dev libyaml-cpp-dev nlohmann-json3-dev
  # each role's /metrics endpoint (metrics.prometheus_port); TLS test certificates;
  # a live Prometheus server scraping `up --local` in the suite
  prometheus-cpp-dev openssl prometheus
  # TLS files checked at load (OpenSSL's libcrypto)
  libssl-dev
  # demonstrations in LIBERO/robomimic HDF5 (envs/demos); h5py reads them back in tests
  libhdf5-dev python3-h5py
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev
  # tooling used by tests (TorchScript export, report rendering check)
  python3 python3-torch  # exports the TorchScript policy in tests (Debian's python3)
  # the env pool from Python (envs/python: pybind11, numpy)
  pybind11-dev python3-dev python3-numpy
  # the Python rollout client (services/python) and its stubs
  python3-grpcio python3-protobuf
  # ... installed with pip into a virtual environment in tests (offline)
  python3-venv python3-setuptools
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
# node + npm validate the Kubernetes manifests in tests (tests/deploy); any
# node on PATH will do (Debian's when there is none). Not where the checkout
# has no tests/deploy (deploy/Dockerfile runs this script before copying the
# sources).
cd "$(dirname "$0")/.."
if [ ! -f tests/deploy/package-lock.json ]; then
  :
elif ! command -v node >/dev/null; then
  missing+=(nodejs npm)
elif ! command -v npm >/dev/null; then
  missing+=(npm)
fi

if [ ${#missing[@]} -eq 0 ]; then
  echo "install_deps: all ${#PACKAGES[@]} packages present"
else
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  echo "install_deps: installing ${#missing[@]} missing packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The npm packages of the manifest tests (versions pinned in
# tests/deploy/package-lock.json), into tests/deploy/node_modules, with npm's
# cache in build/: nothing is written outside the checkout.
if [ -f tests/deploy/package-lock.json ] &&
   { [ ! -d tests/deploy/node_modules ] ||
     [ tests/deploy/package-lock.json -nt tests/deploy/node_modules/.package-lock.json ]; }; then
  echo "install_deps: npm ci in tests/deploy"
  npm ci --prefix tests/deploy --cache "$PWD/build/npm-cache" --no-audit --no-fund
fi
