// File: envs/env_pool.h
// -----------------------------------------------------------------------------
// EnvPool: N manipulation envs stepped on M worker threads, EnvPool-style:
//   Send(env ids, actions) -> action queues -> worker threads -> state queue
//   -> Recv(at least K ready env ids)
// No env waits for another: each env's step is queued on its own, and Recv
// hands back whichever envs are ready. Env i is owned by worker i % M (its
// renderer lives in that worker's GL context) and is seeded with seed + i, so
// results do not depend on the number of threads.
//
// Episodes: a state with done or truncated set is the episode's last; the next
// action sent to that env is ignored and the env resets (auto-reset), so the
// final observation is never lost. Bad actions (wrong size, NaN/Inf) are not
// stepped: the env reports the error, keeps its state, and it is counted.
// Unstable physics (NaN, MuJoCo warnings) ends the episode as truncated, and
// is counted. A crashed env (its step or reset throws), a hung one (a step
// slower than step_deadline_s), or one whose observation breaks the contract
// (image sizes, finite proprio) ends its episode as truncated with `fault`
// set, is reset on its next Send, and is counted; a fault plan injects these
// on chosen env ids and steps. A hang holds its worker thread until the step
// returns (a step cannot be pre-empted); envs of other workers go on.
// An optional latency model adds lognormal wall time to each step
// (emulating slower or remote simulators) without holding the worker.
//
// The workers are envs/env_worker.h; what they share with the pool is
// envs/env_pool_state.h.
//
// Example:
//   absl::StatusOr<std::unique_ptr<EnvPool>> pool = EnvPool::Create(options);
//   std::vector<int> ready;
//   (*pool)->Recv(4, absl::Seconds(1), &ready);      // the initial
//   observations for (int id : ready) act(id, (*pool)->state(id).obs,
//   &actions[7 * k++]);
//   (*pool)->Send(ready, actions);
// -----------------------------------------------------------------------------
#ifndef RLVLA3_ENVS_ENV_POOL_H_
#define RLVLA3_ENVS_ENV_POOL_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "envs/manipulation_env.h"
#include "envs/task.h"
#include "runtime/bounded_queue.h"
#include "runtime/fault_plan.h"
#include "runtime/metrics.h"

namespace rlvla3 {

// Extra wall time per env step: lognormal with the given mean and coefficient
// of variation. Off when mean_ms is 0.
struct LatencyModel {
  double mean_ms = 0.0;
  double cv = 0.0;
  bool enabled() const { return mean_ms > 0.0; }
  std::string Describe() const;
};

struct EnvPoolOptions {
  // Env i runs tasks[(i / task_block) % tasks.size()] (TaskOfEnv); resolved
  // once, by the caller (ResolveTaskList, FindTask), so a task file is read
  // once per run. task_block > 1 keeps blocks of consecutive envs on one
  // task: a GRPO group's envs must share their scene.
  std::vector<TaskSpec> tasks;
  int task_block = 1;
  int num_envs = 8;
  int num_threads = 1;
  uint64_t seed = 0;
  EnvOptions env;
  LatencyModel latency;
  int lp_num_threads = 0;      // llvmpipe threads per render (0: on the worker)
  int first_env_id = 0;        // global id of env 0 (fault plans, logs)
  FaultPlan faults;            // injected faults (tests, drills)
  double step_deadline_s = 0;  // a slower step is a fault (0: off)
  // Envs a worker steps in one sweep before it announces their states (as
  // EnvPool's batch_size < num_envs, or one of Sample Factory's worker
  // splits): the announcements reach the inference batcher together, so a
  // batch fills instead of firing with one observation. A sweep takes only
  // the envs whose actions are already queued, never waits for more; 1
  // announces every env as soon as its own step ends.
  int max_sweep = 1;
  // If set, a ready env is handed to this callback (on the worker or latency
  // timer thread) instead of the state queue, and Recv is not used: the
  // engine's level-1 path. Initial states are not announced; the owner reads
  // state(i) of every env itself after Create. The callback must not block.
  std::function<void(int env_id)> on_ready;
};

// The index into options.tasks of env `env`.
inline int TaskOfEnv(const EnvPoolOptions& o, int env) {
  const int block = o.task_block > 0 ? o.task_block : 1;
  return (env / block) % static_cast<int>(o.tasks.size());
}

// What an env reports after a reset or a step. Valid until the next Send for
// that env.
struct EnvState {
  int env_id = 0;
  uint64_t episode_id = 0;
  int step = 0;  // control steps in this episode (0 after a reset)
  int init_id = 0;
  StepResult
      result;  // of the step that produced this state (zeros after a reset)
  absl::Status error;  // the last action was rejected (not stepped)
  // The env crashed, hung or returned a broken observation: the episode
  // ended here (result.truncated) and obs must not be used.
  absl::Status fault;
  double step_ms =
      0.0;  // wall time of the step (or reset), latency model excluded
  StepPhases phases;          // where that time went (envs/manipulation_env.h)
  int64_t step_begin_ns = 0;  // steady-clock interval of that step (or reset)
  int64_t step_end_ns = 0;
  const Observation* obs = nullptr;
};

struct EnvPoolStats {
  uint64_t steps = 0;          // control steps taken
  uint64_t resets = 0;         // episode resets (auto-resets included)
  uint64_t episodes_done = 0;  // episodes ended by success
  uint64_t truncations = 0;    // episodes ended by the step limit
  uint64_t unstable_resets =
      0;  // episodes ended because physics became unstable
  uint64_t invalid_actions = 0;  // actions rejected (wrong size, NaN/Inf)
  uint64_t faults = 0;  // crashes, hangs past the deadline, broken outputs
  HistogramSnapshot step_ms;  // per-step wall time
  // Per frame (step or reset), means since the start: physics, render,
  // readback, and the worker's hand-off of ready states to their consumer.
  StepPhases phases;
  double handoff_ms = 0;
};

class EnvPool {
 public:
  static absl::StatusOr<std::unique_ptr<EnvPool>> Create(
      const EnvPoolOptions& options);
  ~EnvPool();
  EnvPool(const EnvPool&) = delete;
  EnvPool& operator=(const EnvPool&) = delete;

  // Queues one step per env: actions holds kActionDim floats per id, in order.
  // An id out of range, or an env that already has an action pending, is an
  // InvalidArgument error and nothing is queued.
  absl::Status Send(absl::Span<const int> env_ids,
                    absl::Span<const float> actions);
  // Waits until at least `min_envs` envs are ready (or `timeout` passes) and
  // appends every ready env id to `env_ids`. Returns DeadlineExceeded if fewer
  // than min_envs were ready in time (those that were are still returned).
  absl::Status Recv(int min_envs, absl::Duration timeout,
                    std::vector<int>* env_ids);
  const EnvState& state(int env_id) const;
  // The next Send to this env resets it to initial state `init_id` instead of
  // stepping it (after an episode end: instead of a reset drawn from its own
  // seed). Only between Recv (or on_ready) returning it and the next Send.
  void SetNextReset(int env_id, int init_id);
  // The next Send to this env steps it without drawing its cameras, when
  // nothing will read that step's images (SimEnv::SkipImagesOnNextStep: an
  // episode's last step is drawn all the same). For the next Send only. Only
  // between Recv (or on_ready) returning it and the next Send.
  void SkipImagesOnNextStep(int env_id);
  // The env itself (e.g. for a scripted expert reading privileged state).
  // Only between Recv returning it and the next Send for it.
  const SimEnv& env(int env_id) const;
  // Env `env_id` as a MuJoCo env (the scripted experts'), or null (toy).
  const ManipulationEnv* manipulation_env(int env_id) const;

  int num_envs() const { return options_.num_envs; }
  int num_threads() const { return options_.num_threads; }
  const EnvPoolOptions& options() const { return options_; }
  EnvPoolStats stats() const;
  // Stops the workers; idempotent. Pending actions are dropped.
  void Close();

 private:
  struct Impl;
  explicit EnvPool(const EnvPoolOptions& options);
  EnvPoolOptions options_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace rlvla3

#endif  // RLVLA3_ENVS_ENV_POOL_H_
