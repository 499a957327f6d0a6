// File: services/options/plan_options.h
// -----------------------------------------------------------------------------
// What `rl-vla3 plan` takes from a run config (services/plan/cluster_plan.h):
// the run's shape (envs and env threads per rollout worker, segment length,
// batcher, lag bound, threads, precisions, the policy's sizes and one
// observation's bytes), and the split the config itself describes, in one
// process (`train`: inference actors as servers) or as processes (`up
// --local`: cluster.rollout_workers, inference_servers x actors,
// learner_ranks).
//
// Example:
//   RunShape run = PlanRunShape(config);   // policy shape via PolicyShapeOf
//   Split mine = ConfigSplit(config, /*processes=*/true);
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_OPTIONS_PLAN_OPTIONS_H_
#define RLVLA3_SERVICES_OPTIONS_PLAN_OPTIONS_H_

#include "runtime/config.h"
#include "services/plan/cluster_plan.h"

namespace rlvla3 {

struct TinyVLAOptions;

RunShape PlanRunShape(const Config& c);
// The memory model's view of a TinyVLA (its sizes, heads, chunk, bins);
// the images' size and the parameter count are the caller's.
PolicyShape PolicyShapeOf(const TinyVLAOptions& o);
Split ConfigSplit(const Config& c, bool processes);

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_OPTIONS_PLAN_OPTIONS_H_
