// File: services/rollout/rollout_worker.h
// -----------------------------------------------------------------------------
// RolloutWorker: the rollout role. It owns an env pool and one segment buffer
// per env, and nothing else. Each env, as soon as its observation is ready,
// submits it on the observation channel (level 1); the reply's action chunk
// is stepped `execute_steps` times, then the env submits again. No env waits
// for another env's physics: the pool's worker threads step envs as their
// actions arrive and announce a sweep's envs together. Each decision is
// recorded in the env's RolloutSegment; full segments (rl.rollout_len
// decisions for PPO, one episode for GRPO) are pushed on the segment channel
// (level 2). Staleness is bounded by admission: an env over its budget is
// parked (AdmissionGate) until the policy version it hears of
// (OnPolicyVersion) lets it through.
//
// Example:
//   auto w = RolloutWorker::Create(options, &observations, &segments, &m);
//   (*w)->Start();                              // every env submits
//   weights.Subscribe([&](uint64_t v) { (*w)->OnPolicyVersion(v); });
//   ...
//   (*w)->Stop();                               // the env threads end
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_ROLLOUT_ROLLOUT_WORKER_H_
#define RLVLA3_SERVICES_ROLLOUT_ROLLOUT_WORKER_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "envs/env_pool.h"
#include "runtime/channels/observation_channel.h"
#include "runtime/channels/segment_channel.h"
#include "runtime/metrics.h"
#include "runtime/stage_timeline.h"

namespace rlvla3 {

struct RolloutWorkerOptions {
  EnvPoolOptions pool;    // on_ready is the worker's
  bool grpo = false;      // segments are whole episodes, in groups
  int chunk = 4;          // K: steps per action chunk
  int execute_steps = 4;  // of each chunk, <= chunk
  int group_size = 1;     // GRPO: envs that share initial states
  // Admission units (decisions for PPO, episodes for GRPO) per env per
  // global batch, and how many policy versions ahead an env may run.
  int64_t quota = 16;
  int64_t max_policy_lag = 1;  // 0: lock-step
  uint64_t base_version = 0;   // policy version the run starts from
  uint64_t seed = 0;           // GRPO initial states
  // Stamped on every segment: the env incarnation (a worker process start),
  // so the learner can tell segments of a restarted worker apart.
  uint64_t run_id = 0;
  int64_t success_window = 50;
  int max_episode_steps = 0;  // the longest task's step limit
  // Initial states episodes start from: init_first .. init_first +
  // init_count - 1 of each task (evaluation holds out the states after).
  int init_first = 0;
  int init_count = 50;
  // PPO: an episode cut by its time limit is not a terminal state: its
  // segment ends there with the final observation, whose value the learner
  // bootstraps from (false: the time limit is treated as termination).
  bool bootstrap_truncation = true;
};

// One finished episode, with the policy version that chose its first action.
struct EpisodeRecord {
  uint64_t start_version;
  uint64_t start_frame;  // env frames of the run when it started
  bool success;
  // Started less than one maximum-length episode before its env's last
  // frame: it finished only because it was short (a failure would still
  // have been running), so success rates leave it out. Set by Episodes()
  // once the worker has stopped.
  bool late = false;
  int env = 0;
  uint64_t env_start_frame = 0;  // its env's own frames when it started
};

class RolloutWorker {
 public:
  // Creates the env pool (its threads start, idle). Metrics go to `metrics`,
  // intervals to `timeline` (both must outlive the worker).
  static absl::StatusOr<std::unique_ptr<RolloutWorker>> Create(
      const RolloutWorkerOptions& options, ObservationChannel* observations,
      SegmentChannel* segments, MetricsRegistry* metrics,
      StageTimeline* timeline);
  ~RolloutWorker();
  RolloutWorker(const RolloutWorker&) = delete;
  RolloutWorker& operator=(const RolloutWorker&) = delete;

  // Every env submits its first observation (GRPO: resets to its group's
  // first initial state first).
  void Start();
  // The policy reached `version`: parked envs whose budget opened resume.
  // Called on the publisher's thread; does not block.
  void OnPolicyVersion(uint64_t version);
  // The learner `incarnation` (its process) was starved `starved` times
  // (Learner::starved). A new count with envs parked tops the gate up by one
  // quota (AdmissionGate::TopUp); with none parked the envs are moving and
  // need none. Any thread; does not block.
  void OnLearnerStarved(uint64_t incarnation, uint64_t starved);
  int64_t top_ups() const;  // quotas the learner's starvation added
  // Stops the env threads (idempotent); pending steps are dropped.
  void Stop();
  // The first error of the worker's run path (OK while healthy, and after a
  // failure caused by Stop).
  absl::Status status() const;

  int num_threads() const;
  int parked() const;
  uint64_t parks() const;
  double RollingSuccess() const;
  // Every finished episode; `late` is exact once the worker has stopped.
  std::vector<EpisodeRecord> Episodes() const;

 private:
  struct Impl;
  explicit RolloutWorker(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_ROLLOUT_ROLLOUT_WORKER_H_
