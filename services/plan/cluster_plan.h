// File: services/plan/cluster_plan.h
// -----------------------------------------------------------------------------
// `rl-vla3 plan`'s arithmetic (issue 62): a split of the roles over the nodes
// on offer, forecast by the pipeline model from a stage-cost profile, with
// each pod's memory; every split that fits searched, the best for a goal
// recommended; and the same at several GPU counts.
//
//   a split    rollout workers x envs each (x env threads each), inference
//              servers, learner ranks: the keys cluster.rollout_workers,
//              env.num_envs, threads.env_workers, cluster.inference_servers
//              (or inference pods), cluster.learner_ranks
//   CPU nodes  every role shares the nodes' cores (SharedCores): inference
//              and learner at the profile's threads, the learner at its nice
//   GPU nodes  inference servers and learner ranks one GPU each (sharing
//              them when there are fewer); envs in rollout pods of the run's
//              env threads each, on the cores left after two per GPU role
//              (its host side)
//   all-reduce ring over the ranks: 2 hops of the measured latency,
//              2 (R-1)/R of the gradients' bytes at the link's bandwidth
//              (the measured loopback rate where none is given)
// Large splits are simulated as one inference server's slice (its share of
// the envs and env threads, the whole learner's step time), exact when the
// slices are alike, and scaled back up.
//
// Example:
//   PlanInputs in{profile, run, offer};
//   std::vector<SplitForecast> all = ForecastSplits(in, Candidates(in));
//   const SplitForecast* best = Best(all, PlanGoal{});
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_PLAN_CLUSTER_PLAN_H_
#define RLVLA3_SERVICES_PLAN_CLUSTER_PLAN_H_

#include <string>
#include <vector>

#include "services/plan/memory_model.h"
#include "services/plan/pipeline_model.h"
#include "services/plan/stage_costs.h"

namespace rlvla3 {

// What the run's config fixes (services/options builds it).
struct RunShape {
  int num_envs = 8;     // per rollout worker
  int env_workers = 1;  // threads per rollout worker
  int rollout_len = 16, rollouts_per_step = 1, execute_steps = 1;
  int max_batch = 8;
  double max_wait_s = 0.001;
  int max_policy_lag = 1, micro_batch = 32;
  int inference_threads = 1, learner_threads = 1, learner_nice = 0;
  bool inference_bf16 = false, learner_bf16 = false;
  PolicyShape policy;
  double observation_bytes = 0;  // images + proprio + text of one decision
};

// The machines on offer: `nodes` alike.
struct NodeOffer {
  int nodes = 1, cores = 2, gpus = 0;
  double gpu_memory_gib = 0, host_memory_gib = 0;
  double link_gbps = 0;  // between nodes, per GPU (0: the measured rate)
  int total_gpus() const { return nodes * gpus; }
};

struct Split {
  int rollout_workers = 1, envs_per_worker = 8, env_workers = 1;
  int inference_servers = 1, learner_ranks = 1;
  // The roles in one process (`rl-vla3 train`: one rollout worker, the
  // servers as inference actors, one learner): no wire between them.
  bool in_process = false;
  bool operator==(const Split& o) const;
};

struct PlanInputs {
  StageCostProfile costs;
  RunShape run;
  NodeOffer offer;
  double seconds = 120;  // simulated per forecast
};

struct SplitForecast {
  Split split;
  int global_batch = 0;
  double allreduce_s = 0;
  PipelinePrediction async, sync;
  bool has_sync = false;  // sync is forecast for the chosen splits only
  MemoryEstimate learner, inference, rollout_host;
  bool fits = true;
  std::string why_not;  // when it does not fit
};

struct PlanGoal {
  // 0: the most trained samples/s; else the fewest GPUs (then cores) whose
  // async run makes at least this many env frames/s.
  double frames_per_s = 0;
};

// The model's inputs for one split (exposed for the tests).
StageCosts CostsOf(const PlanInputs& in, const Split& s, double* allreduce_s);
PipelineShape ShapeOf(const PlanInputs& in, const Split& s, bool sync);

SplitForecast Forecast(const PlanInputs& in, const Split& s, bool sync = true);
// The sync forecast of `f`, if not made yet.
void ForecastSync(const PlanInputs& in, SplitForecast* f);
// The splits worth trying on the offer (each role's count within what the
// nodes hold; the global batch split evenly over the ranks); on one CPU
// node also the roles in one process, unless `processes_only`.
std::vector<Split> Candidates(const PlanInputs& in,
                              bool processes_only = false);
// Async only (ForecastSync completes the one chosen).
std::vector<SplitForecast> ForecastSplits(const PlanInputs& in,
                                          const std::vector<Split>& splits);
// The recommendation among those that fit (nullptr: none fits).
const SplitForecast* Best(const std::vector<SplitForecast>& all,
                          const PlanGoal& goal);

// Every candidate forecast briefly (a tenth of the simulated time), then
// the `finalists` best for the goal forecast again in full: what `plan`
// searches with.
struct SplitSearch {
  std::vector<SplitForecast> finalists;  // in full, best first
  std::vector<SplitForecast> others;     // brief forecasts
};
SplitSearch SearchSplits(const PlanInputs& in,
                         const std::vector<Split>& candidates,
                         const PlanGoal& goal, int finalists = 6);

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_PLAN_CLUSTER_PLAN_H_
