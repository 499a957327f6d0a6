// File: services/options/role_setup.h
// -----------------------------------------------------------------------------
// What a role process of a many-process run (`rl-vla3 serve ROLE`) starts
// from, made from the config once: the policy, every role's options, the
// network options and the sizes derived from the run's layout (global envs,
// the routing block, each learner rank's share of the global batch). One
// process's run makes its options in engine_config.h from the same config.
//
// Example:
//   absl::StatusOr<RoleSetup> s = RoleSetupFromConfig(config);
//   absl::StatusOr<LearnerRoleOptions> lo = LearnerProcessOptions(*s, reducer);
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_OPTIONS_ROLE_SETUP_H_
#define RLVLA3_SERVICES_OPTIONS_ROLE_SETUP_H_

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"
#include "runtime/config.h"
#include "runtime/prometheus_endpoint.h"
#include "services/engine/local_engine.h"
#include "services/learner/gradient_reducer.h"
#include "services/learner/learner.h"
#include "services/net/grpc_common.h"
#include "services/net/wire_format.h"

namespace rlvla3 {

// How the role processes of a run keep in touch (cluster.* and
// metrics.interval_s); filled from the config, which holds the defaults.
struct RoleTimings {
  double heartbeat_s = 0;         // status to the learner's roster
  double role_timeout_s = 0;      // a role silent this long is down
  double metrics_interval_s = 0;  // progress lines
  std::string learner_backend;    // gloo | nccl, for data-parallel ranks
  double collective_timeout_s = 0;
};

// What peers may hold of each role's server (cluster.max_*): the largest
// message each role's server takes, sized to what it receives unless
// cluster.max_message_mb says; the reply and roster bounds.
struct ServeLimits {
  int64_t learner_receive_bytes = 0;    // segments, heartbeats
  int64_t inference_receive_bytes = 0;  // observations
  int64_t rollout_receive_bytes = 0;    // status and stop calls
  int max_queued_replies = 1024;
  int max_roster_roles = 1024;
};

// What every role process starts from: the policy (its kind, chunk and text
// length shape everything), every role's options, the network options.
struct RoleSetup {
  EngineParts parts;
  LocalEngineOptions options;
  NetOptions net;
  WireShape shape;
  int workers = 1;             // rollout processes
  int global_envs = 0;         // workers x env.num_envs
  int route_block = 1;         // envs routed to one learner rank (a GRPO group)
  std::string checkpoint_dir;  // <run.out_dir>/<run.name>/checkpoints
  RoleTimings timings;
  ServeLimits limits;
  PrometheusOptions prometheus;  // port 0: no /metrics endpoint
};

absl::StatusOr<RoleSetup> RoleSetupFromConfig(const Config& c);

// <run.out_dir>/<run.name>/checkpoints: where a run's learner checkpoints.
std::string CheckpointDirOf(const Config& c);

// Segments are routed to learner ranks by global env id (in blocks of
// route_block envs): every rank must get the same number of envs, or a rank
// starves while the others wait for it in the gradient all-reduce.
absl::Status CheckRanksGetEqualShares(const RoleSetup& s, size_t ranks);

// The device a learner rank trains on: `configured`, where it names one GPU
// or the CPU; for "cuda" (no index) the machine's GPU local_rank % gpus, the
// one its NCCL group uses, so that ranks sharing a machine share no GPU.
at::Device RankDevice(const at::Device& configured, int local_rank, int gpus);

// The learner role's options in a process: its share of the global batch,
// its device and group, where its checkpoints go.
absl::StatusOr<LearnerRoleOptions> LearnerProcessOptions(
    const RoleSetup& s, GradientReducer* reducer);

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_OPTIONS_ROLE_SETUP_H_
