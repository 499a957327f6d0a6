// File: services/kube/cluster_spec.h
// -----------------------------------------------------------------------------
// CLUSTER.yaml: one rl-vla3 job on Kubernetes (`rl-vla3 up|down|status
// CLUSTER.yaml`, docs/kubernetes.md). Parsed into a ClusterSpec with every
// default filled in; unknown keys and bad values are ConfigErrors
// (runtime/config_schema.h) naming the file, the key and what was expected,
// so the CLI exits 2 on them as it does for a bad run config.
//
//   name: demo                      # job name (DNS-1035 label), required
//   namespace: rl-vla3              # default rl-vla3
//   image: registry/rl-vla3:0.3.0   # required
//   config: ../configs/libero_demo.yaml   # run config, relative to this file
//   token_file: token.txt           # optional shared token (a Secret)
//   tls: {cert: tls.crt, key: tls.key, ca: ca.crt,   # mutual TLS between
//         server_name: rl-vla3}     # the roles (a Secret); required with a
//   allow_plaintext_token: false    # token unless this is true
//   set: [rl.ppo_epochs=2]          # run-config overrides for every role
//   learner:   {replicas: 2, gpus: 1, cpu: "8", memory: 32Gi,
//               set: [learner.device=cuda, learner.precision=bf16]}
//   inference: {replicas: 2, gpus: 1}    # each one its own address
//   rollout:   {replicas: 4, gpus: 0}    # gpus > 0: EGL on the GPU
//   storage:   {class: standard, size: 20Gi, access_mode: ReadWriteMany}
//   ports:     {learner: 50051, inference: 50052, rollout: 50053,
//               rendezvous: 29500, metrics: 9464}   # metrics 0: no /metrics
//   scraper:   {namespace: monitoring,    # who may reach the metrics port:
//               pod_labels: {app.kubernetes.io/name: prometheus}}
//
// Example:
//   absl::StatusOr<ClusterSpec> spec = LoadClusterSpec("deploy/cluster.yaml");
//   if (!spec.ok()) return IsConfigError(spec.status()) ? 2 : 1;
//   absl::StatusOr<std::string> run_config = ReadRunConfig(*spec);
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_KUBE_CLUSTER_SPEC_H_
#define RLVLA3_SERVICES_KUBE_CLUSTER_SPEC_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace rlvla3::kube {

// One role's pods.
struct RoleSpec {
  int64_t replicas = 1;
  int64_t gpus = 0;    // nvidia.com/gpu limit per pod (0: none)
  std::string cpu;     // requests.cpu, e.g. "4" or "500m" ("": none)
  std::string memory;  // requests.memory, e.g. "16Gi" ("": none)
  int64_t port = 0;    // the role's gRPC port
  // Run-config overrides ("key=value") for this role's pods only, after
  // the spec's own.
  std::vector<std::string> overrides;
};

// The roles' certificate, its key and the CA (files, as written and
// resolved); empty cert: no TLS.
struct TlsSpec {
  std::string cert, key, ca;
  std::string cert_path, key_path, ca_path;
  std::string server_name;  // cluster.tls_server_name ("": each host)
};

// The learner's checkpoint volume (a PersistentVolumeClaim).
struct StorageSpec {
  std::string storage_class;  // "": the cluster's default class
  std::string size = "20Gi";
  std::string access_mode;  // ReadWriteMany when learner.replicas > 1, else
                            // ReadWriteOnce, unless given
};

// Who may connect to the pods' metrics port (the NetworkPolicy): the pods of
// `ns` carrying every one of `pod_labels` (none: any pod of `ns`).
struct ScraperSpec {
  std::string ns = "monitoring";
  std::vector<std::pair<std::string, std::string>> pod_labels;
};

struct ClusterSpec {
  std::string path;  // the CLUSTER.yaml it came from
  std::string name;  // job name: prefix of every object, label instance=
  std::string ns = "rl-vla3";
  std::string image;
  std::string config;       // run config as written in CLUSTER.yaml
  std::string config_path;  // ... resolved against CLUSTER.yaml's folder
  std::string token_file;   // token file as written ("": no token)
  std::string token_path;   // ... resolved
  TlsSpec tls;
  bool allow_plaintext_token = false;
  RoleSpec learner{1, 1, "", "", 50051, {}};
  RoleSpec inference{1, 1, "", "", 50052, {}};
  RoleSpec rollout{1, 0, "", "", 50053, {}};
  int64_t rendezvous_port = 29500;  // learner ranks' c10d rendezvous
  int64_t metrics_port = 9464;      // every pod's /metrics (0: none)
  ScraperSpec scraper;
  StorageSpec storage;
  // Run-config overrides ("key=value") for every role's pods (`set:`).
  std::vector<std::string> overrides;
};

// Reads and checks `path` (see the file comment for the keys). With
// `check_files` the run config and the token file must be readable files
// (`down` and `status` need neither).
absl::StatusOr<ClusterSpec> LoadClusterSpec(const std::string& path,
                                            bool check_files = true);

// Same for YAML `text`; `path` names it in errors and is the base of the
// relative paths in it.
absl::StatusOr<ClusterSpec> ParseClusterSpec(const std::string& text,
                                             const std::string& path,
                                             bool check_files = true);

// The run config's text (for the ConfigMap).
absl::StatusOr<std::string> ReadRunConfig(const ClusterSpec& spec);

// The shared token (trailing whitespace dropped, as the roles read it);
// errors name the file, never the token.
absl::StatusOr<std::string> ReadToken(const ClusterSpec& spec);

// The text of tls.cert, tls.key and tls.ca, in that order; errors name the
// file.
absl::StatusOr<std::vector<std::string>> ReadTlsFiles(const ClusterSpec& spec);

// Loads the run config as each role's pods will (with
// cluster.rollout_workers = rollout.replicas and the overrides) and checks
// it against the spec (run.mode sync needs one inference replica; a role on
// a GPU asks for one). Errors are ConfigErrors naming the file at fault.
absl::Status CheckRunConfig(const ClusterSpec& spec);

// The run-config overrides a role's pods pass (--set): the rollout workers'
// count, the spec's `set`, then the role's.
std::vector<std::string> RoleOverrides(const ClusterSpec& spec,
                                       const RoleSpec& role);

}  // namespace rlvla3::kube

#endif  // RLVLA3_SERVICES_KUBE_CLUSTER_SPEC_H_
