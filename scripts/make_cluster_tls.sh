#!/usr/bin/env bash
# Makes what mutual TLS between a job's roles needs, in DIR:
#   ca.crt, ca.key     a CA for this job (keep ca.key off the cluster)
#   tls.crt, tls.key   one certificate every role serves and calls with,
#                      signed by the CA, naming every role's host in JOB
#                      (*.JOB-learner, *.JOB-inference, *.JOB-rollout) and
#                      rl-vla3 (for tls.server_name), localhost, 127.0.0.1
# Then in CLUSTER.yaml: tls: {cert: DIR/tls.crt, key: DIR/tls.key,
# ca: DIR/ca.crt}; for `up --local`, cluster.tls_cert/tls_key/tls_ca.
#
#   bash scripts/make_cluster_tls.sh tls libero-demo [DAYS]
set -euo pipefail
dir=${1:?usage: make_cluster_tls.sh DIR JOB [DAYS]}
job=${2:?usage: make_cluster_tls.sh DIR JOB [DAYS]}
days=${3:-365}
mkdir -p "$dir"
ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
openssl req -x509 "${ec[@]}" -days "$days" -subj "/CN=rl-vla3 $job CA" \
  -keyout "$dir/ca.key" -out "$dir/ca.crt" 2>/dev/null
openssl req "${ec[@]}" -subj "/CN=rl-vla3" -keyout "$dir/tls.key" \
  -out "$dir/tls.csr" 2>/dev/null
san="subjectAltName=DNS:rl-vla3,DNS:*.$job-learner,DNS:*.$job-inference"
san+=",DNS:*.$job-rollout,DNS:localhost,IP:127.0.0.1"
printf '%s\n' "$san" > "$dir/san.cnf"
openssl x509 -req -days "$days" -in "$dir/tls.csr" -CA "$dir/ca.crt" \
  -CAkey "$dir/ca.key" -CAcreateserial -extfile "$dir/san.cnf" \
  -out "$dir/tls.crt" 2>/dev/null
rm -f "$dir/tls.csr" "$dir/san.cnf" "$dir/ca.srl"
chmod 600 "$dir/ca.key" "$dir/tls.key"
echo "make_cluster_tls: $dir/{ca.crt,tls.crt,tls.key} for job $job ($days days)"
