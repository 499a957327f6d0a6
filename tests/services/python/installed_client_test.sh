#!/bin/sh
# The Python client as a user gets it (tests/CMakeLists.txt):
#   installed_client_test.sh CASE PYTHON SOURCE_DIR WORK_DIR RL_VLA3
# CASE:
#   installed        pip installs services/python into a fresh virtual
#                    environment (offline: Debian's grpcio and protobuf through
#                    --system-site-packages), then client_test.py runs against
#                    the installed package, from outside the checkout, with no
#                    PYTHONPATH: the toy worker drives a live learner
#   stubs_current    the committed stubs equal what proto/ generates now
# Exit 0: passed, 1: failed, 77: skipped (a tool missing, saying which).
set -u
test_case=$1 python=$2 src=$3 work=$4 bin=$5
rm -rf "$work" && mkdir -p "$work" || exit 1
case "$test_case" in
  installed)
    if ! "$python" -c "import venv, ensurepip" 2>/dev/null; then
      echo "SKIP: $python has no venv/ensurepip (Debian: python3-venv)"
      exit 77
    fi
    # pip builds in the source tree: a copy keeps the checkout clean.
    cp -r "$src/services/python" "$work/src" || exit 1
    "$python" -m venv --system-site-packages "$work/venv" || exit 1
    "$work/venv/bin/pip" install --quiet --no-index --no-build-isolation \
      "$work/src" || exit 1
    cd "$work" || exit 1
    where=$(env -u PYTHONPATH "$work/venv/bin/python" -c \
      'import rlvla3_client, rlvla3.v1.services_pb2_grpc as s; print(rlvla3_client.__file__, s.__file__)') || exit 1
    case "$where" in
      *"$work/venv/"*"$work/venv/"*) echo "installed: $where" ;;
      *) echo "FAIL: not imported from the virtual environment: $where"; exit 1 ;;
    esac
    exec env -u PYTHONPATH RLVLA3_BINARY="$bin" RLVLA3_SOURCE_DIR="$src" \
      "$work/venv/bin/python" "$src/tests/services/python/client_test.py" -v
    ;;
  stubs_current)
    for tool in protoc grpc_python_plugin; do
      command -v "$tool" > /dev/null || { echo "SKIP: no $tool"; exit 77; }
    done
    bash "$src/scripts/gen_python_stubs.sh" "$work" || exit 1
    status=0
    for f in $(cd "$work" && find . -name '*_pb2*.py' | sort); do
      if ! cmp -s "$work/$f" "$src/services/python/$f"; then
        echo "FAIL: services/python/${f#./} differs from what proto/ generates" \
          "(run bash scripts/gen_python_stubs.sh and commit)"
        status=1
      fi
    done
    [ "$status" = 0 ] && echo "stubs current: $(cd "$work" && find . -name '*_pb2*.py' | wc -l) files"
    exit "$status"
    ;;
  *)
    echo "unknown case $test_case" >&2
    exit 2
    ;;
esac
