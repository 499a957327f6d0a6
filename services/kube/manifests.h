// File: services/kube/manifests.h
// -----------------------------------------------------------------------------
// The Kubernetes objects of one rl-vla3 job, rendered from its ClusterSpec as
// YAML documents, in the order `kubectl apply` should create them:
//
//   Namespace NS                     (shared by the jobs in it)
//   ConfigMap NAME-config            run.yaml = the run config's text
//   Secret NAME-token                token (only with token_file)
//   Secret NAME-tls                  tls.crt, tls.key, ca.crt (only with tls)
//   PersistentVolumeClaim NAME-checkpoints   the learner's run.out_dir
//   NetworkPolicy NAME-same-job      ingress only from the job's own pods
//   Service + StatefulSet NAME-learner     headless; ranks 0..N-1
//   Service + Deployment  NAME-inference   ClusterIP
//   Service + StatefulSet NAME-rollout     headless; worker = pod index
//
// Every object carries app.kubernetes.io/name=rl-vla3, .../instance=NAME and
// .../component=ROLE (the Namespace only the first). Rendering is
// deterministic: the same inputs give byte-identical text (fixed key order,
// no timestamps, no paths other than those written in CLUSTER.yaml).
//
// Example:
//   std::vector<Manifest> docs =
//       RenderManifests(spec, run_config_text, std::nullopt);  // redacted
//   std::fputs(JoinManifests(docs).c_str(), stdout);
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_KUBE_MANIFESTS_H_
#define RLVLA3_SERVICES_KUBE_MANIFESTS_H_

#include <optional>
#include <string>
#include <vector>

#include "services/kube/cluster_spec.h"

namespace rlvla3::kube {

// One YAML document (its leading comment included, no "---").
struct Manifest {
  std::string kind;  // e.g. "StatefulSet"
  std::string name;
  std::string yaml;
};

// Every object of the job. `token`: the Secret's value; nullopt renders
// "<redacted: from TOKEN_FILE>" instead (dry runs, `down`). No Secret without
// spec.token_file.
// What the Secrets hold; each nullopt renders "<redacted: from FILE>" (the
// dry run, `down`).
struct SecretValues {
  std::optional<std::string> token;
  std::optional<std::string> tls_cert, tls_key, tls_ca;
};

std::vector<Manifest> RenderManifests(const ClusterSpec& spec,
                                      const std::string& run_config,
                                      const SecretValues& secrets);

// One multi-document YAML stream: a header comment, then "---" before each.
std::string JoinManifests(const std::vector<Manifest>& manifests);

// Stable DNS names inside the namespace: "NAME-learner-R.NAME-learner".
std::string LearnerHost(const ClusterSpec& spec, int64_t rank);
// Inference server `index`'s stable name (its headless Service): every
// rollout worker lists them all.
std::string InferenceHost(const ClusterSpec& spec, int64_t index);

}  // namespace rlvla3::kube

#endif  // RLVLA3_SERVICES_KUBE_MANIFESTS_H_
