// File: services/kube/kubectl.h
// -----------------------------------------------------------------------------
// kubectl as a child process: found on PATH, started with posix_spawn and an
// argument vector (no shell), the manifests on its stdin, its stdout and
// stderr captured, killed past a deadline. Errors quote kubectl's own words
// (its stderr). Pods are read with `kubectl get pods -o json` and summarised
// per role (learner, inference, rollout): ready/desired, restarts, phases and
// why pods wait (ImagePullBackOff, CrashLoopBackOff, Unschedulable, ...).
//
// Example:
//   absl::StatusOr<Kubectl> k = Kubectl::Find();  // "kubectl not found ..."
//   if (absl::Status s = k->CheckCluster(); !s.ok()) ...
//   absl::StatusOr<std::string> out = k->Apply(JoinManifests(docs));
//   absl::StatusOr<std::vector<PodState>> pods = k->Pods(spec);
//   std::printf("%s\n", ProgressLine(Summarize(spec, *pods)).c_str());
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_KUBE_KUBECTL_H_
#define RLVLA3_SERVICES_KUBE_KUBECTL_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "services/kube/cluster_spec.h"

namespace rlvla3::kube {

struct CommandResult {
  int exit_code = 0;  // 128 + N when signal N ended it
  std::string out, err;
};

// Runs the program at path `argv[0]` with `argv`, `input` on its stdin;
// DeadlineExceeded (after SIGKILL) if it runs past `timeout`.
absl::StatusOr<CommandResult> RunCommand(const std::vector<std::string>& argv,
                                         const std::string& input,
                                         absl::Duration timeout);

// The path of the executable `name` on $PATH, or NotFound.
absl::StatusOr<std::string> FindOnPath(const std::string& name);

// One pod of the job, as `kubectl get pods -o json` reports it.
struct PodState {
  std::string name;
  std::string role;    // its app.kubernetes.io/component label
  std::string phase;   // Pending | Running | ... | Terminating
  std::string reason;  // why a container waits or ended, "" if none
  bool ready = false;  // condition Ready, and not being deleted
  int64_t restarts = 0;
};

// Parses a PodList; errors name what was malformed.
absl::StatusOr<std::vector<PodState>> ParsePods(const std::string& json);

// One role's pods against what CLUSTER.yaml asks for.
struct RoleState {
  std::string role;
  int64_t desired = 0, ready = 0, restarts = 0;
  std::map<std::string, int> phases;  // phase -> pods
  std::set<std::string> reasons;
};

// learner, inference, rollout, in that order.
std::vector<RoleState> Summarize(const ClusterSpec& spec,
                                 const std::vector<PodState>& pods);
bool AllReady(const std::vector<RoleState>& roles);
// "learner 1/2 ready  inference 0/1 ready (ImagePullBackOff)  rollout 2/2
// ready".
std::string ProgressLine(const std::vector<RoleState>& roles);

class Kubectl {
 public:
  // kubectl on PATH, or NotFound: "kubectl not found on PATH: install kubectl
  // or use --dry-run to print the manifests".
  static absl::StatusOr<Kubectl> Find();
  explicit Kubectl(std::string path) : path_(std::move(path)) {}

  // Unavailable, quoting kubectl's first stderr line, unless the cluster
  // answers (`kubectl version`, 10 s request timeout).
  absl::Status CheckCluster() const;
  // `kubectl apply -f -`; kubectl's stdout (one line per object). `secret`
  // (the token in the manifests) is masked in errors.
  absl::StatusOr<std::string> Apply(const std::string& manifests,
                                    const std::string& secret) const;
  // `kubectl delete -f - --ignore-not-found`, waiting until they are gone.
  absl::StatusOr<std::string> Delete(const std::string& manifests) const;
  // The job's pods (label app.kubernetes.io/instance=NAME).
  absl::StatusOr<std::vector<PodState>> Pods(const ClusterSpec& spec) const;

 private:
  // kubectl `args` with `input`; an error (quoting its stderr, `secret`
  // masked) unless it exits 0.
  absl::StatusOr<std::string> Run(const std::vector<std::string>& args,
                                  const std::string& input,
                                  absl::Duration timeout,
                                  const std::string& secret = "") const;

  std::string path_;
};

}  // namespace rlvla3::kube

#endif  // RLVLA3_SERVICES_KUBE_KUBECTL_H_
