// File: services/runs/local_cluster.h
// -----------------------------------------------------------------------------
// `rl-vla3 up --local`, `down --local` and `status`: every role of a run as a
// separate process on this machine, at the addresses the config lays out
// (cluster.host; learner at cluster.base_port, inference server i at
// base_port+1+i, rollout worker w at base_port+1+servers+w, learner rank r > 0
// at base_port+servers+workers+r, the ranks' rendezvous after them).
//   up      starts the learner, then the inference servers, then the rollout
//           workers, each once the previous ones answer health checks;
//           prints one combined progress line per interval; what a role's
//           exit means is its RestartPolicy's (restart_policy.h): the
//           learner's exit 0 ends the run (exit 0), any role's exit 2 ends
//           it (exit 2), a crash is restarted with backoff (1 s doubling to
//           30 s, reset after a minute of stable running) until the 5th in
//           10 minutes ends the run (exit 1), naming the role's log. A
//           learner rank that crashes takes its whole group down and up
//           again, and it resumes from its newest checkpoint (rl.resume).
//           The run lasts rl.duration_s unless --duration says otherwise;
//           on Ctrl-C / SIGTERM / `down` stops rollout, inference, learner
//           in that order.
//   down    signals the `up` of the run (its pid is in RUN_DIR/up.pid).
//   status  is cluster_status.h's.
// Logs: RUN_DIR/logs/ROLE.log.
//
// Example:
//   UpLocalOptions o{.binary = "/usr/bin/rl-vla3", .config_path = ...};
//   return RunUpLocal(o);
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_RUNS_LOCAL_CLUSTER_H_
#define RLVLA3_SERVICES_RUNS_LOCAL_CLUSTER_H_

#include <string>
#include <vector>

#include "runtime/config.h"
#include "services/net/grpc_common.h"
#include "services/options/cluster_options.h"

namespace rlvla3 {

struct UpLocalOptions {
  std::string binary;       // rl-vla3 itself
  std::string config_path;  // the run's resolved config (every role reads it)
  std::string run_dir;
  ClusterLayout layout;
  double interval_s = 1;       // progress line
  double role_timeout_s = 10;  // a role silent this long is reported
  // A role process alive but answering no status call this long is killed
  // (SIGKILL) and restarted as a crash would be (0: never).
  double liveness_s = 60;
  double duration_s = 0;  // 0: until stopped (the verb gives rl.duration_s)
  double collective_timeout_s = 60;  // learner ranks (stop grace)
  int metrics_port = 0;  // role k's /metrics at metrics_port + k (0: none)
  NetOptions net;
};

// Exit code: 0 after a requested stop, the duration or the learner's clean
// exit; 2 when a role refused its configuration; 1 when the run could not
// start or a role kept crashing.
int RunUpLocal(const UpLocalOptions& options);
int RunDownLocal(const std::string& run_dir);

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_RUNS_LOCAL_CLUSTER_H_
