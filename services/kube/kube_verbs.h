// File: services/kube/kube_verbs.h
// -----------------------------------------------------------------------------
// `rl-vla3 up|down|status CLUSTER.yaml`: one rl-vla3 job on Kubernetes
// (docs/kubernetes.md).
//   up CLUSTER.yaml [--dry-run] [--timeout S]
//       checks CLUSTER.yaml and its run config, renders the manifests
//       (services/kube/manifests.h); --dry-run prints them (token redacted)
//       and needs no kubectl; else `kubectl apply -f -` and one progress line
//       per change until every pod is ready (or S seconds, default 600).
//   down CLUSTER.yaml [--delete-data]
//       `kubectl delete -f -` of the same objects, except the Namespace
//       (shared) and, unless --delete-data, the checkpoint volume.
//   status CLUSTER.yaml
//       ready/desired, restarts and pod phases per role; exit 1 unless all
//       are ready.
// Exit codes: 0 ok, 1 failure (no kubectl, cluster unreachable, not ready),
// 2 a bad CLUSTER.yaml, run config or flag.
//
// Example:
//   if (IsKubeInvocation(args)) return RunKubeCli(args);  //
//   services/verbs/cli.cc return RunKubeUp("deploy/cluster.yaml", {.dry_run =
//   true});
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_KUBE_KUBE_VERBS_H_
#define RLVLA3_SERVICES_KUBE_KUBE_VERBS_H_

#include <string>
#include <vector>

namespace rlvla3::kube {

struct KubeUpOptions {
  bool dry_run = false;    // print the manifests, touch nothing
  double timeout_s = 600;  // wait this long for every pod to be ready
  double poll_s = 2;       // between `kubectl get pods`
};

struct KubeDownOptions {
  bool delete_data = false;  // also the PersistentVolumeClaim
};

int RunKubeUp(const std::string& path, const KubeUpOptions& options);
int RunKubeDown(const std::string& path, const KubeDownOptions& options);
int RunKubeStatus(const std::string& path);

// True for `up|down|status CLUSTER.yaml ...` (a positional argument right
// after the verb, no --local): the Kubernetes form of those verbs.
bool IsKubeInvocation(const std::vector<std::string>& args);

// Parses `args` (verb first) and runs the verb; exit 2 on a bad flag.
int RunKubeCli(const std::vector<std::string>& args);

}  // namespace rlvla3::kube

#endif  // RLVLA3_SERVICES_KUBE_KUBE_VERBS_H_
