#!/bin/sh
# rlvla3_envs as a user installs it from the checkout (tests/CMakeLists.txt):
#   installed_envs_test.sh PYTHON SOURCE_DIR BUILD_DIR WORK_DIR
# pip installs envs/python into a fresh virtual environment (offline; numpy is
# Debian's through --system-site-packages; the backend reuses BUILD_DIR), then
# rlvla3_envs_test.py runs against the installed package from outside the
# checkout with no PYTHONPATH.
# Exit 0: passed, 1: failed, 77: skipped (saying why).
set -u
python=$1 src=$2 build=$3 work=$4
rm -rf "$work" && mkdir -p "$work" || exit 1
if ! "$python" -c "import venv, ensurepip, numpy" 2>/dev/null; then
  echo "SKIP: $python has no venv/ensurepip or numpy (Debian: python3-venv python3-numpy)"
  exit 77
fi
"$python" -m venv --system-site-packages "$work/venv" || exit 1
RLVLA3_BUILD_DIR="$build" "$work/venv/bin/pip" install --quiet --no-index \
  "$src/envs/python" || exit 1
cd "$work" || exit 1
where=$(env -u PYTHONPATH "$work/venv/bin/python" -c \
  'import rlvla3_envs; print(rlvla3_envs.__file__, rlvla3_envs.__version__)') || exit 1
case "$where" in
  "$work/venv/"*) echo "installed: $where" ;;
  *) echo "FAIL: not imported from the virtual environment: $where"; exit 1 ;;
esac
exec env -u PYTHONPATH "$work/venv/bin/python" \
  "$src/tests/envs/python/rlvla3_envs_test.py" -v
