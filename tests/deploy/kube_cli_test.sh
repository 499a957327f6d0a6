#!/bin/sh
# `rl-vla3 up|down|status CLUSTER.yaml` as a user runs them (tests/CMakeLists.txt):
#   kube_cli_test.sh CASE RL_VLA3 SOURCE_DIR WORK_DIR [NODE]
# CASE:
#   dry_run_validates         up --dry-run prints the golden file, no token;
#                             kubernetes-models accepts it (and the examples',
#                             the GPU one's overrides on their roles only)
#   validator_rejects_broken  validate_manifests.mjs fails on broken input
#   plan_cluster_validates    the CLUSTER.yaml `rl-vla3 plan --out` writes (4
#                             one-GPU nodes, the H200 stage costs on record)
#                             goes through up --dry-run; kubernetes-models
#                             accepts its manifests
#   no_kubectl                up/down/status without kubectl on PATH: exit 1
#   bad_cluster_yaml          bad CLUSTER.yaml or flag: exit 2, file and key
#   fake_kubectl              up/status/down through a stand-in kubectl
# Exit 0: passed, 1: failed, 77: skipped (node or node_modules missing).
set -u
test_case=$1 bin=$2 src=$3 work=$4 node=${5:-}
deploy="$src/tests/deploy"
rm -rf "$work" && mkdir -p "$work" || exit 1

fail() {
  echo "FAIL: $*" >&2
  for f in "$work"/out "$work"/err; do [ -s "$f" ] && sed 's/^/  | /' "$f" >&2; done
  exit 1
}

need_node() {
  if [ -z "$node" ] || [ ! -x "$node" ]; then
    echo "SKIP: node not found (scripts/install_deps.sh installs nodejs and npm)"
    exit 77
  fi
  if [ ! -d "$deploy/node_modules/kubernetes-models" ]; then
    echo "SKIP: $deploy/node_modules missing (scripts/install_deps.sh runs npm ci)"
    exit 77
  fi
}

# run EXPECTED_EXIT CMD...: stdout to $work/out, stderr to $work/err.
run() {
  want=$1
  shift
  "$@" > "$work/out" 2> "$work/err"
  rc=$?
  [ "$rc" -eq "$want" ] || fail "exit $rc, expected $want: $*"
}

expect_in() {  # expect_in FILE TEXT
  grep -qF -- "$2" "$1" || fail "'$2' not in $(basename "$1")"
}

case "$test_case" in
  plan_cluster_validates)
    need_node
    run 0 "$bin" plan --config "$src/configs/bench_node.yaml" \
      --stage-costs "$src/configs/stage_costs/h200_bench_node.json" \
      --nodes 4 --cores 16 --gpus 1 --gpu-memory 143 --seconds 20 \
      --name planned --out "$work/CLUSTER.yaml"
    expect_in "$work/out" "recommended:"
    expect_in "$work/CLUSTER.yaml" "name: planned"
    run 0 "$bin" up "$work/CLUSTER.yaml" --dry-run
    cp "$work/out" "$work/manifests.yaml"
    expect_in "$work/manifests.yaml" "kind: StatefulSet"
    run 0 "$node" "$deploy/validate_manifests.mjs" "$work/manifests.yaml"
    cat "$work/out"
    ;;
  dry_run_validates)
    need_node
    run 0 "$bin" up "$deploy/cluster.yaml" --dry-run
    cmp -s "$work/out" "$deploy/cluster_golden.yaml" ||
      fail "up --dry-run differs from cluster_golden.yaml (see kube_manifests_test)"
    grep -qF "$(cat "$deploy/token.fixture")" "$work/out" && fail "the token is printed"
    cp "$work/out" "$work/manifests.yaml"
    run 0 "$node" "$deploy/validate_manifests.mjs" "$work/manifests.yaml"
    cat "$work/out"
    run 0 "$bin" up "$src/deploy/cluster.example.yaml" --dry-run
    cp "$work/out" "$work/example.yaml"
    run 0 "$node" "$deploy/validate_manifests.mjs" "$work/example.yaml"
    cat "$work/out"
    # The GPU cluster's example: each role's overrides reach its pods only.
    run 0 "$bin" up "$src/deploy/cluster.gpu.example.yaml" --dry-run
    cp "$work/out" "$work/gpu.yaml"
    for want in learner.device=cuda learner.precision=bf16 \
        inference.device=cuda inference.precision=bf16 env.render_backend=gpu \
        libero-gpu-inference-1.libero-gpu-inference:50052; do
      expect_in "$work/gpu.yaml" "$want"
    done
    run 0 "$node" "$deploy/validate_manifests.mjs" "$work/gpu.yaml"
    cat "$work/out"
    ;;
  validator_rejects_broken)
    need_node
    run 1 "$node" "$deploy/validate_manifests.mjs" "$deploy/broken_manifests.yaml"
    expect_in "$work/err" "Service broken-learner (document 1): invalid"
    expect_in "$work/err" "StatefulSet broken-learner (document 2): invalid"
    # Schema-valid, but the learner and inference have no GPU.
    sed '/nvidia.com\/gpu/d' "$deploy/cluster_golden.yaml" > "$work/no_gpu.yaml"
    run 1 "$node" "$deploy/validate_manifests.mjs" "$work/no_gpu.yaml"
    expect_in "$work/err" "container learner: no nvidia.com/gpu limit"
    # Without probes.
    sed 's/livenessProbe:/startupProbe2:/' "$deploy/cluster_golden.yaml" > "$work/no_probe.yaml"
    run 1 "$node" "$deploy/validate_manifests.mjs" "$work/no_probe.yaml"
    expect_in "$work/err" "no TCP livenessProbe (tcpSocket.port) with TLS"
    # Without TLS the probes must be gRPC ones.
    sed 's/name: tls$/name: tls-gone/' "$deploy/cluster_golden.yaml" > "$work/no_tls.yaml"
    run 1 "$node" "$deploy/validate_manifests.mjs" "$work/no_tls.yaml"
    expect_in "$work/err" "no gRPC livenessProbe"
    # The metrics port the annotation names must be a container port.
    sed 's/containerPort: 9464/containerPort: 9465/' \
      "$deploy/cluster_golden.yaml" > "$work/no_metrics_port.yaml"
    run 1 "$node" "$deploy/validate_manifests.mjs" "$work/no_metrics_port.yaml"
    expect_in "$work/err" "prometheus.io/port 9464 is not a container port"
    # A rollout worker that misses an inference server.
    run 0 "$bin" up "$src/deploy/cluster.gpu.example.yaml" --dry-run
    sed 's/,libero-gpu-inference-1\.libero-gpu-inference:50052//' "$work/out" > "$work/one_server.yaml"
    run 1 "$node" "$deploy/validate_manifests.mjs" "$work/one_server.yaml"
    expect_in "$work/err" "expected every server"
    ;;
  no_kubectl)
    for verb in up down status; do
      run 1 env PATH=/nonexistent "$bin" "$verb" "$deploy/cluster.yaml"
      expect_in "$work/err" "kubectl not found on PATH: install kubectl or use --dry-run to print the manifests"
    done
    ;;
  bad_cluster_yaml)
    cp "$deploy/run.yaml" "$work/run.yaml"
    printf 'name: job\nimage: img\nconfig: run.yaml\nlearner:\n  replicas: 0\n' > "$work/bad.yaml"
    run 2 "$bin" up "$work/bad.yaml" --dry-run
    expect_in "$work/err" "$work/bad.yaml: learner.replicas = \"0\": expected an integer from 1 to 64"
    printf 'name: job\nimage: img\nconfig: run.yaml\nrollout: {gpu: 1}\n' > "$work/bad.yaml"
    run 2 "$bin" up "$work/bad.yaml"
    expect_in "$work/err" "$work/bad.yaml: rollout.gpu: expected a known key under rollout"
    printf 'name: job\nimage: img\nconfig: run.yaml\n' > "$work/ok.yaml"
    printf 'env:\n  num_envs: -1\n' > "$work/run.yaml"
    run 2 "$bin" up "$work/ok.yaml" --dry-run
    expect_in "$work/err" "env.num_envs"
    run 2 "$bin" up "$work/absent.yaml" --dry-run
    run 2 "$bin" up "$deploy/cluster.yaml" --bogus
    expect_in "$work/err" "unknown argument '--bogus'"
    run 2 "$bin" up "$deploy/cluster.yaml" --timeout -1
    ;;
  fake_kubectl)
    export FAKE_KUBECTL_DIR="$work"
    PATH="$deploy/fake-bin:$PATH"
    export PATH
    pod() {  # pod NAME ROLE READY
      printf '{"metadata": {"name": "%s", "labels": {"app.kubernetes.io/component": "%s"}}, "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "%s"}], "containerStatuses": [{"restartCount": 0}]}}' "$1" "$2" "$3"
    }
    pods() {  # pods READY_OF_THE_LAST_ROLLOUT_POD
      printf '{"items": [%s, %s, %s, %s, %s, %s]}\n' \
        "$(pod kube-fixture-learner-0 learner True)" "$(pod kube-fixture-learner-1 learner True)" \
        "$(pod kube-fixture-inference-abc inference True)" "$(pod kube-fixture-rollout-0 rollout True)" \
        "$(pod kube-fixture-rollout-1 rollout True)" "$(pod kube-fixture-rollout-2 rollout "$1")" \
        > "$work/pods.json"
    }
    pods True
    run 0 "$bin" up "$deploy/cluster.yaml" --timeout 20
    expect_in "$work/out" "learner 2/2 ready  inference 1/1 ready  rollout 3/3 ready"
    expect_in "$work/out" "job kube-fixture is ready in namespace rl-vla3-test"
    expect_in "$work/out" "kubectl -n rl-vla3-test logs -f statefulset/kube-fixture-learner"
    expect_in "$work/apply.yaml" "token: \"$(cat "$deploy/token.fixture")\""
    grep -qF "redacted" "$work/apply.yaml" && fail "up applied a redacted token"
    grep -qF "$(cat "$deploy/token.fixture")" "$work/out" "$work/err" && fail "up printed the token"
    run 0 "$bin" status "$deploy/cluster.yaml"
    expect_in "$work/out" "rollout    3/3"
    pods False
    run 1 "$bin" status "$deploy/cluster.yaml"
    expect_in "$work/out" "rollout    2/3"
    run 1 "$bin" up "$deploy/cluster.yaml" --timeout 3
    expect_in "$work/err" "not every pod is ready after 3 s"
    run 0 "$bin" down "$deploy/cluster.yaml"
    expect_in "$work/out" "kept PersistentVolumeClaim kube-fixture-checkpoints"
    expect_in "$work/delete.yaml" "kind: StatefulSet"
    grep -qE "kind: (PersistentVolumeClaim|Namespace)" "$work/delete.yaml" &&
      fail "down deletes the volume or the namespace"
    run 0 "$bin" down "$deploy/cluster.yaml" --delete-data
    expect_in "$work/delete.yaml" "kind: PersistentVolumeClaim"
    touch "$work/unreachable"
    run 1 "$bin" up "$deploy/cluster.yaml"
    expect_in "$work/err" "cannot reach the Kubernetes cluster (kubectl version): The connection to the server localhost:8080 was refused"
    ;;
  *)
    fail "unknown case $test_case"
    ;;
esac
echo "PASS: $test_case"
