// File: services/engine/local_engine.h
// -----------------------------------------------------------------------------
// LocalEngine: the three roles wired in one process for `train` and `bench`,
// over the in-process implementations of the three channels.
//
//   RolloutWorker --(1) ObservationChannel--> InferenceServer
//        |     ^------------ action replies ------+     ^
//        +--(2) SegmentChannel--> Learner --(3) WeightChannel
//
// The roles never know which channel implementation they hold; the services
// issue puts gRPC behind the same interfaces. Mode is wiring:
//   async  the inference server batches dynamically (B_max / T_max), the
//          learner trains micro-batches as segments stream in, envs run up to
//          rl.max_policy_lag versions ahead;
//   sync   barriers: the inference server waits for every env not parked,
//          envs may not run ahead (lag 0), the learner waits for the whole
//          global batch before training.
// The engine owns the channels, the metrics registry and the timeline, runs
// the metrics interval and stops every role on the first error, on Stop, on
// rl.duration_s or after rl.max_steps.
//
// Example:
//   LocalEngineOptions options = ...;   // built from the config by the verb
//   auto e = LocalEngine::Create(options, parts);
//   (*e)->Run(hooks);
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_ENGINE_LOCAL_ENGINE_H_
#define RLVLA3_SERVICES_ENGINE_LOCAL_ENGINE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "policies/text_tokenizer.h"
#include "policies/trainable_policy.h"
#include "runtime/bounded_queue.h"
#include "runtime/channels/rollout_segment.h"
#include "runtime/metrics.h"
#include "runtime/stage_timeline.h"
#include "services/inference/inference_server.h"
#include "services/learner/learner.h"
#include "services/rollout/rollout_worker.h"

namespace rlvla3 {

// What the engine trains (the verb loads these from config/checkpoint).
struct EngineParts {
  std::shared_ptr<TrainablePolicy> policy;  // trained by the learner
  TextTokenizer tokenizer;                  // instructions -> tokens
  uint64_t version = 0;                     // of the policy's weights
};

struct LocalEngineOptions {
  bool sync = false;
  std::string algorithm = "ppo";  // for the start-up line
  RolloutWorkerOptions rollout;
  InferenceServerOptions inference;  // full_batch is set by the sync wiring
  LearnerRoleOptions learner;        // whole_batch is set by the sync wiring
  QueueOptions request_queue;        // level 1 (overflow: block)
  QueueOptions segment_queue;        // level 2 (overflow: block)
  SegmentShape segment_shape;
  int segment_count = 0;  // preallocated segments
  // The policy's declared interface (JSON; empty: TinyVLA's fixed shape)
  // and, for a bins head, each dimension's bin count (what a segment from
  // a peer is checked against; empty: nothing to check).
  std::string policy_interface_json;
  std::vector<int64_t> action_bins;
  // The instruction table's rows (task_id): env.tasks in order.
  std::vector<std::string> task_names, instructions;
  double duration_s = 60;
  double metrics_interval_s = 1;
  bool timeline = false;
};

struct EngineHooks {
  // Every metrics interval, from the thread that called Run.
  std::function<void(const MetricsSnapshot&)> on_interval;
  // After every optimizer step (or skipped step), from the learner thread.
  std::function<void(const LearnerStepStats&)> on_step;
  // Polled every 20 ms by Run; true stops the run (e.g. a signal's flag).
  std::function<bool()> should_stop;
};

// Figures at the end of a run.
struct EngineSummary {
  std::string mode;
  double wall_s = 0;
  uint64_t env_frames = 0, decisions = 0, episodes = 0, successes = 0;
  int64_t trained_samples = 0, optimizer_steps = 0, skipped_steps = 0;
  int64_t dropped_samples = 0;
  int64_t aged_out_samples = 0;  // of dropped: waited past the lag bound
  uint64_t parks = 0;
  double env_frames_per_s = 0, trained_samples_per_s = 0, s_per_step = 0;
  double lag_mean = 0, lag_max = 0;
  double inference_batch_mean = 0;
  double busy_env = 0, busy_inference = 0, busy_learner = 0;     // percent
  double cpu_s_env = 0, cpu_s_inference = 0, cpu_s_learner = 0;  // busy s
  double rolling_success = 0;
  uint64_t version = 0;
};

class LocalEngine {
 public:
  using EpisodeRecord = ::rlvla3::EpisodeRecord;
  // Rolling success rate and trained samples at each optimizer step.
  // After each optimizer step: samples trained so far, the version it made,
  // the rolling success then, episodes finished, seconds since Run began.
  struct LearningPoint {
    int64_t trained_samples;
    uint64_t version;
    double rolling_success;
    uint64_t episodes;
    double t_s = 0;
  };

  static absl::StatusOr<std::unique_ptr<LocalEngine>> Create(
      const LocalEngineOptions& options, EngineParts parts);
  ~LocalEngine();
  LocalEngine(const LocalEngine&) = delete;
  LocalEngine& operator=(const LocalEngine&) = delete;

  // Runs until duration_s passes, max_steps optimizer steps are taken,
  // Stop() is called, or a role fails (its error is returned). Stops every
  // role before returning.
  absl::Status Run(const EngineHooks& hooks);
  // Asks Run to finish (thread- and async-signal-safe: sets a flag).
  void Stop() { stop_requested_.store(true, std::memory_order_relaxed); }

  EngineSummary Summary() const;
  MetricsRegistry& metrics();
  // Recorded only with options.timeline.
  std::vector<StageInterval> Timeline() const;
  std::vector<LearningPoint> LearningCurve() const;
  // Every finished episode, with the policy version that chose its first
  // action (success by start version has no bias toward short episodes).
  std::vector<EpisodeRecord> Episodes() const;
  // Histogram of trained samples' policy lag (index = lag).
  std::vector<int64_t> LagHistogram() const;
  // The learner's policy (e.g. for the final checkpoint, after Run).
  TrainablePolicy& policy();
  const TextTokenizer& tokenizer() const;

 private:
  struct Impl;
  explicit LocalEngine(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  std::atomic<bool> stop_requested_{false};
};

// Success rate of the episodes grouped by the policy version that started
// them, in `buckets` equal version ranges over [min, max start version]
// (fewer when there are fewer versions), leaving out `late` episodes. The
// learning curve without the bias toward short (successful) episodes, early
// in a run (only quick ones have finished) and at its end (only quick ones
// could finish).
struct SuccessBucket {
  uint64_t version_lo = 0, version_hi = 0;  // inclusive
  int64_t episodes = 0, successes = 0;
  double mean_start_frame = 0;
  double rate() const { return episodes ? double(successes) / episodes : 0; }
};
std::vector<SuccessBucket> SuccessByStartVersion(
    const std::vector<EpisodeRecord>& episodes, int buckets);

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_ENGINE_LOCAL_ENGINE_H_
