// File: runtime/engine/engine.h
// -----------------------------------------------------------------------------
// The triple-level asynchronous engine: env pool, inference actors and learner
// in one process, connected by three queue levels.
//
//   env pool --(1) request queue--> inference actors --(action chunk)--> env
//      |                                  ^
//      +--(2) trajectory queue--> learner -+ (3) versioned weight snapshots
//
// (1) Each env submits its observation as soon as it is ready; actors form
//     dynamic batches (B_max / T_max) and send each env its action chunk,
//     per-step log-probs, value and policy version. An env executes
//     rl.execute_steps of the chunk, then submits again.
// (2) Per-env segment buffers (rl.rollout_len decisions for PPO, one episode
//     for GRPO) stream into the learner, which trains micro-batches as they
//     arrive and takes one optimizer step per global batch.
// (3) After each step the learner publishes a deep-copied snapshot; actors
//     swap it in between batches and never wait for it.
// Staleness is bounded by admission (AdmissionGate: an env over its budget is
// parked until the learner catches up) and, as a backstop, by dropping
// segments older than rl.max_policy_lag in the learner.
//
// Mode "sync" runs the same components with barriers: an env is inferred only
// together with every other env (one batch), each env collects exactly its
// share of the global batch and is parked, the learner waits for the whole
// rollout, trains, publishes, and only then are the envs released.
//
// Example:
//   EngineParts parts{pool_options, net, tokenizer, version};
//   absl::StatusOr<std::unique_ptr<Engine>> e = Engine::Create(config, parts);
//   (*e)->Run(hooks);   // until rl.duration_s, rl.max_steps or Stop()
// -----------------------------------------------------------------------------
#ifndef RLVLA3_RUNTIME_ENGINE_ENGINE_H_
#define RLVLA3_RUNTIME_ENGINE_ENGINE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "envs/env_pool.h"
#include "policies/text_tokenizer.h"
#include "policies/tiny_vla.h"
#include "runtime/config.h"
#include "runtime/engine/learner.h"
#include "runtime/metrics.h"

namespace rlvla3 {

// What the engine is built from (the CLI loads these from config/checkpoint).
struct EngineParts {
  EnvPoolOptions pool;      // on_ready is set by the engine
  TinyVLA net{nullptr};     // trained by the learner
  TextTokenizer tokenizer;  // instructions -> tokens
  uint64_t version = 0;     // of net's weights
};

// One interval on the stage timeline (steady-clock ns).
struct StageInterval {
  enum Stage { kEnvStep, kInference, kLearnerUpdate, kWeightPublish };
  Stage stage;
  int64_t begin_ns, end_ns;
};

struct EngineHooks {
  // Every metrics.interval_s, from the thread that called Run.
  std::function<void(const MetricsSnapshot&)> on_interval;
  // After every optimizer step (or skipped step), from the learner thread.
  std::function<void(const LearnerStepStats&)> on_step;
};

// Figures at the end of a run.
struct EngineSummary {
  std::string mode;
  double wall_s = 0;
  uint64_t env_frames = 0, decisions = 0, episodes = 0, successes = 0;
  int64_t trained_samples = 0, optimizer_steps = 0, skipped_steps = 0;
  int64_t dropped_samples = 0;
  uint64_t parks = 0;
  double env_frames_per_s = 0, trained_samples_per_s = 0, s_per_step = 0;
  double lag_mean = 0, lag_max = 0;
  double inference_batch_mean = 0;
  double busy_env = 0, busy_inference = 0, busy_learner = 0;     // percent
  double cpu_s_env = 0, cpu_s_inference = 0, cpu_s_learner = 0;  // busy s
  double rolling_success = 0;
  uint64_t version = 0;
};

class Engine {
 public:
  static absl::StatusOr<std::unique_ptr<Engine>> Create(const Config& config,
                                                        EngineParts parts);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Runs until rl.duration_s passes, rl.max_steps optimizer steps are taken,
  // Stop() is called, or a stage fails (its error is returned). Drains and
  // stops every stage before returning.
  absl::Status Run(const EngineHooks& hooks);
  // Asks Run to finish (thread- and async-signal-safe: sets a flag).
  void Stop() { stop_requested_.store(true, std::memory_order_relaxed); }

  EngineSummary Summary() const;
  MetricsRegistry& metrics();
  // Recorded only with rl.timeline.
  std::vector<StageInterval> Timeline() const;
  // Rolling success rate and trained samples at each optimizer step.
  struct LearningPoint {
    int64_t trained_samples;
    uint64_t version;
    double rolling_success;
    uint64_t episodes;
  };
  std::vector<LearningPoint> LearningCurve() const;
  // Every finished episode, with the policy version that chose its first
  // action. Success by start version has no bias toward short episodes
  // (early in a run, only quick successes have finished yet).
  struct EpisodeRecord {
    uint64_t start_version;
    uint64_t start_frame;  // env frames of the run when it started
    bool success;
    // Started less than one maximum-length episode before its env's last
    // frame: it finished only because it was short (a failure would still
    // have been running), so success rates leave it out. Set by Episodes()
    // once Run has returned.
    bool late = false;
    int env = 0;
    uint64_t env_start_frame = 0;  // its env's own frames when it started
  };
  std::vector<EpisodeRecord> Episodes() const;
  // Histogram of trained samples' policy lag (index = lag).
  std::vector<int64_t> LagHistogram() const;
  // The learner's network (e.g. for the final checkpoint, after Run).
  TinyVLA& net();
  const TextTokenizer& tokenizer() const;

 private:
  struct Impl;
  explicit Engine(std::unique_ptr<Impl> impl);
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
    const std::vector<Engine::EpisodeRecord>& episodes, int buckets);

}  // namespace rlvla3

#endif  // RLVLA3_RUNTIME_ENGINE_ENGINE_H_
