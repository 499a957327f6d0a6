#!/usr/bin/env bash
# Issue 60's table, rerun: every hostile input of the table through the real
# binary and the Python module, one row each: command, exit code, the last
# line of its message and its peak RSS (/usr/bin/time). Nothing here may end
# in 134/136/139 or hang (each Python probe runs under `timeout 120`).
#
#   bash scripts/probe_bad_inputs.sh [BUILD_DIR]     # default: build
#
# Needs /usr/bin/time, python3-h5py and python3-torch (Debian's interpreter).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
B=$BUILD/services/rl-vla3
PY=/usr/bin/python3
P=$(mktemp -d /tmp/probe_bad_inputs.XXXXXX)
trap 'rm -rf "$P"' EXIT
cd "$ROOT"
"$PY" scripts/probe_bad_input_files.py "$P" > /dev/null || exit 1

echo "| input | exit | message (last line) | peak RSS |"
echo "|---|---|---|---|"
probe() {  # label, command...
  local label=$1; shift
  /usr/bin/time -f "%M" -o "$P/rss" "$@" > "$P/out" 2>&1
  local rc=$?
  local msg; msg=$(grep -v "^[0-9:.]* I \|^$\|^Command exited" "$P/out" | tail -1 | cut -c1-160)
  printf '| %s | %s | %s | %s MB |\n' "$label" "$rc" "$msg" \
    "$(( $(tail -1 "$P/rss") / 1024 ))"
}
RUN="--set sft.tasks=lift_the_red_cube --set env.image_width=64 --set env.image_height=64"
for f in good attr task t1e9 t1e5 t0 nan big; do
  probe "demos $f.hdf5 (config)" $B config $RUN --set sft.demos=$P/$f.hdf5
done
probe "demos folder with a link loop (config)" $B config $RUN --set sft.demos=$P/loop
probe "demos t0.hdf5 (sft)" $B sft $RUN --set sft.demos=$P/t0.hdf5 --set run.out_dir=$P/runs
probe "demos attr.hdf5 (sft)" $B sft $RUN --set sft.demos=$P/attr.hdf5 --set run.out_dir=$P/runs

# Declarations: a declared TorchScript module with its manifest edited.
D='{"format":"rl-vla3/interface/v1","cameras":[{"name":"agentview","height":64,"width":64},{"name":"wrist","height":64,"width":64}],"proprio":8,"action":{"kind":"gaussian","size":7},"chunk":4}'
"$PY" scripts/export_torchscript_policy.py "$P/g.pt" --declare "$D" --manifest > /dev/null || exit 1
"$PY" scripts/export_torchscript_policy.py "$P/r.pt" --declare "$D" --raise-in-heads > /dev/null || exit 1
cp "$P/g.interface.json" "$P/g.interface.json.orig"
decl() {  # label, sed expression on the manifest
  sed "$2" "$P/g.interface.json.orig" > "$P/g.interface.json"
  probe "$1" $B config --set policy.kind=torchscript --set policy.path=$P/g.pt
}
decl "declaration low/high +-1e308" 's/"size": 7/"size": 7, "low": -1e308, "high": 1e308/'
decl "declaration range 5e-324" 's/"size": 7/"size": 7, "low": 0, "high": 5e-324/'
decl "declaration height 64.9" '0,/"height": 64/s//"height": 64.9/'
decl "declaration height 1e300" '0,/"height": 64/s//"height": 1e300/'
decl "declaration chunk 4.7" 's/"chunk": 4/"chunk": 4.7/'
decl "declaration NaN" 's/"proprio": 8/"proprio": NaN/'
decl "declaration 1e400" 's/"proprio": 8/"proprio": 1e400/'
decl "tokenizer model ." 's/"chunk": 4/"chunk": 4, "instruction": {"tokenizer": "sentencepiece", "model": "."}/'
decl "tokenizer model /dev/zero" 's/"chunk": 4/"chunk": 4, "instruction": {"tokenizer": "sentencepiece", "model": "\/dev\/zero"}/'
decl "tokenizer model missing" 's/"chunk": 4/"chunk": 4, "instruction": {"tokenizer": "sentencepiece", "model": "none.model"}/'
cp "$P/g.interface.json.orig" "$P/g.interface.json"
probe "heads() raises at the probe" $B config --set policy.kind=torchscript --set policy.path=$P/r.pt

# The Python pool.
py() {  # label, Python code after `import numpy as np, rlvla3_envs`
  probe "$1" env PYTHONPATH="$BUILD/envs/python" timeout 120 "$PY" -c "import numpy as np, rlvla3_envs
$2"
}
MAKE='e = rlvla3_envs.make("lift_the_red_cube", num_envs=2, image_size=(32, 32)); e.reset(seed=0)'
py "rlvla3_envs send with one id 20 times" "$MAKE; e.send(np.zeros((20, 7), np.float32), np.zeros(20, np.int32))"
py "rlvla3_envs send [0, 0]" "$MAKE; e.send(np.zeros((2, 7), np.float32), [0, 0])"
py "rlvla3_envs make(num_envs=10**6)" 'rlvla3_envs.make("lift_the_red_cube", num_envs=10**6)'
py "rlvla3_envs max_episode_steps=-5" 'rlvla3_envs.make("lift_the_red_cube", num_envs=1, max_episode_steps=-5)'
py "rlvla3_envs seed=-1" 'rlvla3_envs.make("lift_the_red_cube", num_envs=1, seed=-1)'
py "rlvla3_envs a MuJoCo error" 'rlvla3_envs._core._raise_mujoco_error("mj_stackAlloc: insufficient memory")'
py "rlvla3_envs recv from two threads" "import threading
$MAKE
errs = []
def f():
    try: e._core.recv(1, 1.0)
    except Exception as x: errs.append(type(x).__name__)
ts = [threading.Thread(target=f) for _ in range(2)]; [t.start() for t in ts]; [t.join() for t in ts]
raise SystemExit('errors: %s' % sorted(errs))"
