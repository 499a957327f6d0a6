// File: services/options/selfcheck_options.h
// -----------------------------------------------------------------------------
// `rl-vla3 selfcheck`'s options, from the selfcheck.*, queues.request,
// batcher.*, threads.inference_actors, metrics.interval_s and run.seed keys.
//
// Example:
//   absl::StatusOr<SelfCheckReport> r =
//       RunSelfCheck(SelfCheckOptionsFromConfig(config), &metrics);
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_OPTIONS_SELFCHECK_OPTIONS_H_
#define RLVLA3_SERVICES_OPTIONS_SELFCHECK_OPTIONS_H_

#include <cstdint>

#include "runtime/bounded_queue.h"
#include "runtime/config.h"
#include "runtime/dynamic_batcher.h"

namespace rlvla3 {

// Synthetic envs (one producer thread each) against inference actors that
// batch dynamically and run a small MLP.
struct SelfCheckOptions {
  int64_t num_envs = 0, steps_per_env = 0;
  int64_t obs_dim = 0, action_dim = 0, hidden = 0;
  double env_step_ms = 0;  // emulated simulator time per step
  QueueOptions requests;   // room for every env as a producer
  BatcherOptions batcher;
  int64_t inference_actors = 0;
  double tick_s = 0;  // metrics.interval_s: the progress callback's period
  uint64_t seed = 0;
};

SelfCheckOptions SelfCheckOptionsFromConfig(const Config& c);

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_OPTIONS_SELFCHECK_OPTIONS_H_
