#!/usr/bin/env bash
# The attack and fault table of issues 49 and 60: each row tried with real processes
# and sockets on this machine, and printed as a markdown table (PASS/FAIL,
# seconds, what was run). Rows are the suite's own tests where one covers the
# case (a test that failed on the code before the fix), and direct runs of
# the binary for the rest (a crash loop under `up --local`, mismatched TLS
# files at `serve`).
#
#   bash scripts/fault_table.sh [BUILD_DIR]     # default: build
set -u
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${1:-$ROOT/build}"
BIN="$BUILD/services/rl-vla3"
T="$BUILD/tests"
WORK="$(mktemp -d /tmp/fault_table.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
ROWS=()
FAILED=0

row() {  # row "fault" "expected" command...
  local fault="$1" expect="$2"
  shift 2
  local t0 rc
  t0=$(date +%s)
  "$@" >"$WORK/out" 2>&1
  rc=$?
  local s=$(($(date +%s) - t0))
  if [ $rc -eq 0 ]; then verdict=PASS; else verdict=FAIL; FAILED=1; tail -20 "$WORK/out"; fi
  ROWS+=("| $fault | $expect | $verdict | $s | \`${*##*/}\` |")
  echo "$verdict ($s s): $fault" >&2
}

gtest() { "$T/$1" --gtest_filter="$2" --gtest_brief=1; }

# Units lost on the way: the learner counts itself starved, its heartbeat
# replies say so, and a worker's gate tops up (the jump row above shows it
# end to end).
starved_top_up() {
  gtest learner_starved_test '*' && gtest admission_gate_test '*TopUp*' &&
    gtest roster_test '*'
}

# A crash loop: inference 0 killed -9 each time it comes back; the 5th crash
# in 10 minutes ends the run with exit 1 and names the role's log.
crash_loop() {
  local base=$((17000 + $$ % 400 * 8))
  "$BIN" up --local --config "$ROOT/configs/bench_cpu.yaml" --set env.num_envs=2 \
    --set rl.duration_s=600 --set cluster.base_port=$base \
    --set run.out_dir="$WORK" --set run.name=loop >"$WORK/up.out" 2>"$WORK/up.err" &
  local up=$!
  local killed=0 seen=""
  for _ in $(seq 1 600); do
    sleep 0.5
    kill -0 $up 2>/dev/null || break
    local pid
    pid=$(grep -oE "inference 0 (serving on [^ ]+ |restarted )\(pid [0-9]+" "$WORK/up.out" |
      tail -1 | grep -oE "[0-9]+$")
    if [ -n "$pid" ] && [ "$pid" != "$seen" ]; then
      kill -9 "$pid" 2>/dev/null && killed=$((killed + 1))
      seen=$pid
    fi
  done
  wait $up
  local rc=$?
  echo "killed $killed times; up exited $rc"
  cat "$WORK/up.err"
  [ $rc -eq 1 ] && grep -q "keeps crashing" "$WORK/up.err" &&
    grep -q "logs/inference_0.log" "$WORK/up.err"
}

# A key that does not match its certificate: `serve learner` exits 2 naming
# cluster.tls_key before it listens.
tls_mismatch() {
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$WORK/other.key" \
    -out "$WORK/other.crt" -days 1 -subj /CN=other >/dev/null 2>&1 || return 1
  "$BIN" serve learner --listen 127.0.0.1:0 --config "$ROOT/configs/bench_cpu.yaml" \
    --set run.out_dir="$WORK" --set run.name=tls \
    --set cluster.tls_cert="$ROOT/tests/deploy/tls/tls.crt" \
    --set cluster.tls_key="$WORK/other.key" \
    --set cluster.tls_ca="$ROOT/tests/deploy/tls/ca.crt"
  local rc=$?
  echo "exit $rc"
  [ $rc -eq 2 ]
}

# Issue 60's hostile demonstration files (tests/fuzz/make_demo_corpus.py:
# attribute arrays, 10^9 declared steps, a 100,000-pixel camera, demos of no
# steps, a NaN action) through `rl-vla3 config`: each exit 2 with a message,
# never 134/136/139.
hostile_demos() {
  /usr/bin/python3 "$ROOT/tests/fuzz/make_demo_corpus.py" "$WORK/demos" >/dev/null ||
    return 1
  local f rc bad=0
  for f in "$WORK"/demos/*.hdf5; do
    [ "$(basename "$f")" = good.hdf5 ] && continue
    "$BIN" config --set sft.tasks=lift_the_red_cube --set sft.demos="$f" \
      >/dev/null 2>"$WORK/err"
    rc=$?
    echo "$(basename "$f"): exit $rc: $(head -c 300 "$WORK/err")"
    [ $rc -eq 2 ] || bad=1
  done
  return $bad
}

# rlvla3_envs misused from Python: each misuse an exception, never a hang.
python_misuse() {
  (cd "$ROOT/tests/envs/python" &&
    PYTHONPATH="$BUILD/envs/python" timeout 300 /usr/bin/python3 -m unittest \
      rlvla3_envs_test.Misuse)
}

not_regular_files() {
  gtest instruction_encoder_test '*NotARegularFile*' &&
    gtest task_file_test '*NotARegularFile*'
}

replay() {  # the seed corpora of the file doors' fuzz targets
  local t
  for t in demo_file interface task_file config stage_costs; do
    "$BUILD/tests/fuzz/${t}_fuzz" "$ROOT/tests/fuzz/corpus/$t" || return 1
  done
}

row "learner restarted below the version its servers hold (rl.resume=never)" \
  "versions advance above it within 30 s" \
  gtest local_cluster_test '*FreshLearnerUnderRunningServers*'
row "units lost on the way (learner short of its batch, every env parked)" \
  "the learner says it is starved; the workers top admission up" \
  starved_top_up
row "learner exits 0 (rl.max_steps) / exits 2 (config) under up --local" \
  "the run ends 0 / 2, no restart" gtest local_cluster_test '*CleanExitEndsTheRun*'
row "a role that keeps crashing (inference killed -9 on every start)" \
  "up stops (exit 1) naming the log" crash_loop
row "a role alive but silent (SIGSTOP)" "killed and restarted; training goes on" \
  gtest local_cluster_test '*AliveButSilent*'
row "two writers on one run folder" "the second exits 2 naming the holder; nothing torn" \
  gtest resume_test '*SecondWriter*'
row "power loss after a commit (unsynced data dropped)" "resume from one that verifies" \
  gtest checkpoint_store_test '*PowerLoss*:*PruneKeepsWhole*'
row "a checkpoint that verifies but does not load" "set aside; the one before resumed" \
  gtest resume_test '*DoesNotLoad*'
row "every checkpoint rejected" "exit 2, nothing moved; no silent fresh start" \
  gtest resume_test '*AllFail*'
row "a chain of parked streams of bad segments; more than the cap" \
  "walked in a loop (no stack overflow); past 1024 RESOURCE_EXHAUSTED" \
  gtest learner_service_test '*Parked*'
row "a client that never reads its replies; an oversized message; roster flood" \
  "memory bounded; RESOURCE_EXHAUSTED, server serves on" gtest peer_limits_test '*'
row "127.example.org and address lists with the token in plaintext" "refused" \
  gtest tls_test '*Loopback*:*TokenTransport*'
row "slowloris clients on /metrics" "scrapes answered at once" \
  gtest prometheus_endpoint_test '*SlowClients*'
row "a key that does not match its certificate" "exit 2 naming cluster.tls_key" \
  tls_mismatch
row "expired or not yet valid certificate" "config error naming the key" \
  gtest tls_test '*Expired*:*KeyThatDoesNotMatch*'
row "fuzzed observations, notices, heartbeats (seed corpus)" "no crash; documented codes" \
  "$BUILD/tests/fuzz/peer_messages_fuzz" "$ROOT/tests/fuzz/corpus/peer_messages"
row "down --local with a stale up.pid naming another process" "nothing signalled" \
  gtest local_cluster_test '*StaleUpPid*'
row "HDF5 demo files: attribute arrays, 10^9 steps, a huge camera, no steps, NaN" \
  "exit 2 naming the dataset; nothing of the declared size allocated" hostile_demos
row "an HDF5 demo file that crashes HDF5 itself (SIGSEGV in H5Aread) or never finishes" \
  "read in a child first: refused naming the file; the run goes on" \
  gtest libero_file_test '*CrashesHdf5*:*DoesNotFinish*'
row "a folder of demo files holding a link loop and a dangling link" \
  "the files it holds listed; no uncaught filesystem_error" \
  gtest sft_demo_file_test '*LinkLoop*:*AnotherShape*'
row "a declaration with 64.9, 1e300, NaN, 1e400, a +-1e308 or 5e-324 range" \
  "refused naming the field; never truncated, never a LibTorch abort" \
  gtest policy_interface_test '*DeclaredNumbers*'
row "a TorchScript heads() that raises at the load-time probe" \
  "refused naming heads() and the shapes given" gtest declared_policy_test '*Raises*'
row "a tokenizer model, task file or scene that is a folder or /dev/zero" \
  "refused unread: not a regular file" not_regular_files
row "rlvla3_envs: an id listed twice, 10^6 envs, negative horizon or seed, two threads, a MuJoCo error" \
  "ValueError / RuntimeError; no hang, no exit" python_misuse
row "a stage-cost profile with a bad, missing or unknown key, or a folder or /dev/zero" \
  "refused naming the file and the key; nothing read from a device" \
  gtest stage_costs_test '*Refused*'
row "fuzzed demo files, declarations, task files, configs, stage costs (seed corpora)" \
  "no crash; errors name the file" replay

echo
echo "| fault or attack | expected | result | s | run |"
echo "|---|---|---|---|---|"
printf '%s\n' "${ROWS[@]}"
exit $FAILED
