#!/usr/bin/env bash
# A local run with every role over mutual TLS and a shared token, scraped:
# `up --local` for 75 s with metrics.prometheus_port=9464 and JSON logs, each
# role's /metrics fetched with curl at 50 s, `rl-vla3 status` over TLS.
# Outputs in OUT (default /tmp/rlvla3-live): m9464.prom (learner),
# m9465.prom (inference), m9466.prom (rollout), status.out, runs/*/logs.
#
#   bash scripts/live_metrics_tls.sh [OUT]
set -u
cd "$(dirname "$0")/.."
out=${1:-/tmp/rlvla3-live}
bin=build/services/rl-vla3
rm -rf "$out" && mkdir -p "$out"
bash scripts/make_cluster_tls.sh "$out/tls" live
echo "live-token-$RANDOM$RANDOM" > "$out/token"
keys=(--set "cluster.tls_cert=$out/tls/tls.crt" --set "cluster.tls_key=$out/tls/tls.key"
      --set "cluster.tls_ca=$out/tls/ca.crt" --set "cluster.token_file=$out/token"
      --set metrics.prometheus_port=9464 --set run.log_format=json
      --set "run.out_dir=$out/runs")
"$bin" up --local --config configs/bench_cpu.yaml "${keys[@]}" --duration 75 \
  > "$out/up.out" 2>&1 &
sleep 50
for port in 9464 9465 9466; do
  curl -s "http://127.0.0.1:$port/metrics" > "$out/m$port.prom"
  echo "127.0.0.1:$port/metrics: $(wc -l < "$out/m$port.prom") lines"
done
grep -hE '^rlvla3_(trained_samples_total|observations_served_total|env_frames_total)' \
  "$out"/m946?.prom
"$bin" status --config configs/bench_cpu.yaml "${keys[@]}" > "$out/status.out" 2>&1
echo "status exit $?"
wait
echo "up exit $?"
