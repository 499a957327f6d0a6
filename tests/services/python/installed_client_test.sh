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
#   other_pythons    every other Python 3.9+ on PATH or of pyenv (not PYTHON) builds and
#                    installs the client with its own pip, offline, without
#                    setuptools' `wheel`; one of PYTHON's minor version (whose
#                    ABI Debian's grpcio fits) then runs client_test.py there,
#                    with Debian's grpcio and protobuf through a .pth file
#                    (docs/simulators.md); skipped when there is none
# Exit 0: passed, 1: failed, 77: skipped (a tool missing, saying which).
set -u
test_case=$1 python=$2 src=$3 work=$4 bin=$5

# other_pythons PYTHON SRC WORK BIN (see above).
other_pythons() {
  debian=$(realpath "$(command -v "$1")") src=$2 work=$3 bin=$4
  want=$("$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  system_site=$("$1" -c 'import grpc, os; print(os.path.dirname(os.path.dirname(grpc.__file__)))')
  seen="" built=0 tested=""
  for exe in $(for d in $(echo "$PATH" | tr ':' ' '); do
                 ls "$d"/python3 "$d"/python3.[0-9] "$d"/python3.[0-9][0-9] 2>/dev/null
               done
               # pyenv's versions, also those its shims do not select now
               ls "${PYENV_ROOT:-$HOME/.pyenv}"/versions/*/bin/python3 2>/dev/null); do
    ver=$("$exe" -c 'import sys; print("%d.%d" % sys.version_info[:2]) if sys.version_info >= (3, 9) else exit(1)' 2>/dev/null) || continue
    real=$("$exe" -c 'import sys, os; print(os.path.realpath(sys.executable))')
    case " $seen " in *" $real "*) continue ;; esac
    seen="$seen $real"
    [ "$real" = "$debian" ] && continue
    "$exe" -c "import venv, ensurepip" 2>/dev/null || continue
    dir="$work/$ver"
    rm -rf "$dir" && cp -r "$src/services/python" "$dir-src" || return 1
    "$exe" -m venv "$dir" || return 1
    if "$dir/bin/python" -c "import wheel" 2>/dev/null; then
      echo "note: $real has wheel in its venv"
    fi
    if [ "$ver" = "$want" ] && [ -z "$tested" ]; then
      # Debian's grpcio and protobuf, for an interpreter of their ABI.
      site=$("$dir/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
      echo "$system_site" > "$site/debian-grpc.pth"
      "$dir/bin/pip" install --quiet --no-index "$dir-src" || return 1
      tested=$real
    else
      "$dir/bin/pip" install --quiet --no-index --no-deps "$dir-src" || return 1
    fi
    got=$(cd "$work" && "$dir/bin/python" -c 'import importlib.metadata as m; print(m.version("rlvla3-client"))') || return 1
    echo "built and installed by $real (Python $ver, its own pip): rlvla3-client $got"
    built=$((built + 1))
  done
  [ "$built" -gt 0 ] || { echo "SKIP: no Python 3.9+ on PATH other than $debian"; return 77; }
  [ -n "$tested" ] || { echo "SKIP (after $built builds): no other Python $want to run the client against Debian's grpcio"; return 77; }
  echo "client_test.py under $tested:"
  cd "$work" || return 1
  env -u PYTHONPATH RLVLA3_BINARY="$bin" RLVLA3_SOURCE_DIR="$src" \
    "$work/$want/bin/python" "$src/tests/services/python/client_test.py" -v
}
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
    "$work/venv/bin/pip" install --quiet --no-index "$work/src" || exit 1
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
  other_pythons)
    other_pythons "$python" "$src" "$work" "$bin"
    exit $?
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
