// File: services/runs/stage_costs_bench.h
// -----------------------------------------------------------------------------
// `rl-vla3 bench --stage-costs FILE`: each stage alone on this node, at the
// points the cluster model (services/plan) needs, as a stage-cost profile
// (services/plan/stage_costs.h):
//   env        the config's pool stepped with zero actions: a worker's
//              compute per frame (mean, cv, p50, p99, phases), the latency
//              model's wait (the config's), resident memory per env
//   inference  batches of 1, 2, 4, ... up to twice batcher.max_batch
//   learner    optimizer steps over a quarter, half and all of the run's
//              global batch (envs x rollout_len)
//   allreduce  two Gloo ranks in this process over loopback, at sizes up to
//              twice the policy's gradients
//   policy     trainable parameters; checkpoint and AdamW bytes
//   wire       the roles' messages between processes on loopback
//              (services/runs/wire_costs_bench.h)
// Same options, devices and threads as the run: what `bench` measures of a
// stage alone, at more points.
//
// Example:
//   absl::StatusOr<StageCostProfile> p =
//       MeasureStageCosts(config, "configs/toy_reach.yaml", 2.0);
//   WriteTextFile("costs.json", StageCostsJson(*p));
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_RUNS_STAGE_COSTS_BENCH_H_
#define RLVLA3_SERVICES_RUNS_STAGE_COSTS_BENCH_H_

#include <string>

#include "absl/status/statusor.h"
#include "runtime/config.h"
#include "services/plan/stage_costs.h"

namespace rlvla3 {

// `seconds` per measured point (at least a few calls each).
absl::StatusOr<StageCostProfile> MeasureStageCosts(
    const Config& config, const std::string& config_path, double seconds);

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_RUNS_STAGE_COSTS_BENCH_H_
