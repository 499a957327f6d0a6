// File: services/learner/learner.h
// -----------------------------------------------------------------------------
// Learner: the learner role. It owns the segment intake, micro-batching, the
// optimizer (in LearnerCore) and weight publication, on one thread, and
// nothing else. Segments popped from the level-2 source are trained as
// micro-batches as they stream in; after each global batch's optimizer step
// (or PPO's epochs) a snapshot of the weights is published on the level-3
// weight channel at the new version, and the segments go back to the source.
//
// Sync mode is wiring, not a flag: with `whole_batch` the learner waits for
// the whole global batch before it trains its first micro-batch.
//
// Example:
//   Learner learner(policy, options, version, &segments, &weights, &metrics,
//                   &timeline);          // publishes `version` at once
//   learner.Start([&] { segments.Close(); }, on_step);
//   ...
//   learner.Stop();  absl::Status s = learner.Wait();
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_LEARNER_LEARNER_H_
#define RLVLA3_SERVICES_LEARNER_LEARNER_H_

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "policies/text_tokenizer.h"
#include "policies/trainable_policy.h"
#include "runtime/channels/segment_channel.h"
#include "runtime/channels/weight_channel.h"
#include "runtime/metrics.h"
#include "runtime/role_threads.h"
#include "runtime/stage_timeline.h"
#include "services/learner/learner_checkpoints.h"
#include "services/learner/learner_core.h"

namespace rlvla3 {

struct LearnerRoleOptions {
  LearnerOptions core;
  at::Tensor text, text_len;  // instruction table (as the inference server's)
  bool whole_batch = false;   // sync wiring: train once the batch is complete
  int nice = 0;               // the learner thread's nice value (> 0: lower)
  int64_t max_steps = 0;      // done() after this many optimizer steps
  // No segment arrived and nothing was trained this long: the learner is
  // starved (see starved()); zero: never.
  absl::Duration starved_after = absl::Seconds(10);
  // Data-parallel: this process is one rank (not owned; null: alone). Only
  // rank 0 publishes weights; the ranks join before the first step.
  GradientReducer* reducer = nullptr;
  // When and where the learner checkpoints (learner_checkpoints.h); no
  // folder: none.
  CheckpointOptions checkpoints;
  // A checkpoint to resume the training state from (its weights, of
  // `resume_version`, are the policy's already): optimizer moments,
  // learning rate, step count, the shuffle's state.
  std::string resume_from;
  uint64_t resume_version = 0;
  // What rank 0 does to the folder before the first step (resume_plan.h).
  std::vector<CheckpointInfo> reject;
  bool clear_checkpoints = false;
};

class Learner {
 public:
  using StepHook = std::function<void(const LearnerStepStats&)>;
  // Publishes the initial weights at `version` on `weights`. The channels,
  // `metrics` and `timeline` must outlive the learner.
  Learner(std::shared_ptr<TrainablePolicy> policy,
          const LearnerRoleOptions& options, uint64_t version,
          SegmentSource* segments, WeightChannel<Policy>* weights,
          MetricsRegistry* metrics, StageTimeline* timeline);
  ~Learner();
  Learner(const Learner&) = delete;
  Learner& operator=(const Learner&) = delete;

  // Starts the learner thread. `on_stop` runs once when it stops (an error
  // or Stop) and must close the segment source. `on_step` runs after every
  // optimizer step (or skipped step), on the learner thread, before the new
  // weights are published.
  void Start(std::function<void()> on_stop, StepHook on_step);
  // The highest version the weight subscribers hold (set once, before
  // Start; LearnerService::highest_held_version). A learner that finds it
  // at or above its own version (it started fresh, or from an older
  // checkpoint, under inference servers that kept running) publishes its
  // weights at once as the version above it: subscribers take only newer
  // versions, so below it the cluster would stall. Alone only: a
  // data-parallel group's ranks keep one version, so there it is logged.
  void SetHeldVersionSource(std::function<uint64_t()> held);
  // Times the learner was starved: its batch incomplete, no segment for
  // options.starved_after while the rollout workers' admission budget
  // assumed every unit it admitted would arrive (units lost on the way: a
  // broken stream, samples of dropped versions, a GRPO group short of a
  // member). The rollout workers hear it (heartbeat replies, or `hook` on
  // the learner thread, set before Start) and admit one more quota each
  // (AdmissionGate::TopUp): without it neither side moves again.
  uint64_t starved() const { return starved_.load(); }
  void SetStarvedHook(std::function<void(uint64_t starved)> hook);
  void Stop() { threads_.Stop(); }
  bool stopping() const { return threads_.stopping(); }
  absl::Status Wait() { return threads_.Wait(); }
  // True once rl.max_steps optimizer steps were taken.
  bool done() const { return done_.load(std::memory_order_relaxed); }

  uint64_t version() const;
  // Optimizer steps a resumed learner restored (0 for a fresh one).
  int64_t steps_restored() const { return steps_before_.load(); }
  // Trained samples per policy lag (index = lag), as of the last step.
  std::vector<int64_t> LagHistogram() const;
  // The trained policy: only while the learner thread is not running.
  TrainablePolicy& policy();

 private:
  absl::Status Loop();
  void Publish();
  // Joins the ranks (data-parallel) and restores options.resume_from.
  absl::Status Prepare();
  void ReleaseConsumed();
  // SetHeldVersionSource's jump, checked between batches.
  void GoAboveHeldVersion();
  void RecordStep(const LearnerStepStats& st, int64_t u0, int64_t u1);
  // Adds what the core's drop totals grew by since the last call to the
  // metrics (after an Add, a step or a jump: each may drop samples).
  void CountIntake();
  // Counts a starvation once options.starved_after passed since last_fed_ns_.
  void CheckStarved();

  LearnerRoleOptions options_;
  std::unique_ptr<LearnerCore> core_;
  std::unique_ptr<LearnerCheckpoints> checkpoints_;
  SegmentSource* segments_;
  WeightChannel<Policy>* weights_;
  StageTimeline* timeline_;
  StepHook on_step_;
  std::function<uint64_t()> held_version_;
  bool held_warned_ = false;
  bool publishes_ = true;  // rank 0 (or alone)
  std::atomic<bool> done_{false};
  std::atomic<uint64_t> version_{0};
  mutable std::mutex mu_;
  std::vector<int64_t> lag_hist_ ABSL_GUARDED_BY(mu_);
  int64_t last_step_ns_ = 0;
  int64_t last_fed_ns_ = 0;  // a segment arrived or a micro-batch trained
  std::atomic<uint64_t> starved_{0};
  std::function<void(uint64_t)> starved_hook_;
  std::atomic<int64_t> steps_before_{0};  // steps restored (checkpoint)

  struct Metrics;
  std::unique_ptr<Metrics> m_;
  RoleThreads threads_;  // last: stops and joins the thread first
};

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_LEARNER_LEARNER_H_
