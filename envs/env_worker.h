// File: envs/env_worker.h
// -----------------------------------------------------------------------------
// EnvWorker: one env-pool worker thread. It owns a GL context (current on its
// thread only, made once), one renderer per task shared by its envs, and
// envs index, index + workers, ... of the pool. Run() serves sweeps until its
// action queue closes: it takes every env whose action is queued (up to
// max_sweep, never waiting for more), steps each (or resets it after an
// episode end), then announces them together, so their requests reach the
// inference batcher as one group. A step that throws, outlives
// step_deadline_s or returns a broken observation ends its episode as a
// fault (counted; the env resets on its next Send). With batched readback
// (env.readback) the sweep's images are drawn as each env steps and
// read back once per task's renderer before any is announced. Each frame's
// phases (physics, render, its share of the readback) and the
// announcement's hand-off are summed into the pool's counters.
//
// Example (what EnvPool::Create runs on each worker thread):
//   absl::StatusOr<std::unique_ptr<EnvWorker>> w =
//       EnvWorker::Create(&state, /*index=*/0, /*workers=*/2, models);
//   if (!w.ok()) return w.status();
//   return (*w)->Run();
// -----------------------------------------------------------------------------
#ifndef RLVLA3_ENVS_ENV_WORKER_H_
#define RLVLA3_ENVS_ENV_WORKER_H_

#include <chrono>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "envs/egl_context.h"
#include "envs/env_pool_state.h"
#include "envs/manipulation_env.h"
#include "envs/renderer.h"

namespace rlvla3 {

class EnvWorker {
 public:
  using TaskModels = std::map<std::string, std::shared_ptr<const TaskModel>>;
  // On the worker's own thread: its GL context, renderers and envs. `state`
  // outlives the worker.
  static absl::StatusOr<std::unique_ptr<EnvWorker>> Create(
      EnvPoolState* state, int index, int workers, const TaskModels& models);
  EnvWorker(const EnvWorker&) = delete;
  EnvWorker& operator=(const EnvWorker&) = delete;

  // Serves sweeps until the action queue closes.
  absl::Status Run();

 private:
  using Clock = std::chrono::steady_clock;
  EnvWorker(EnvPoolState* state, int index);
  // Env i as a MuJoCo env of `task`'s model, drawn by this worker's
  // renderer of that task (`images`: tiles per task, batched readback).
  absl::Status MakeManipulationEnv(int i, const std::string& task,
                                   const TaskModels& models,
                                   const std::map<std::string, int>& images);
  struct StepTiming {
    Clock::time_point began, ended;
  };
  // Steps (or resets) env `id` and fills its state but its images, which
  // land at the sweep's FlushRenderers (batched readback) or already have.
  StepTiming StepEnv(int id);
  // Reads back every renderer's drawn images; returns the time it took.
  int64_t FlushRenderers();
  // Records the step's phases and time, with its share of the sweep's
  // readback; returns when the step began (the latency model counts from
  // there).
  Clock::time_point FinishStep(int id, const StepTiming& timing,
                               int64_t readback_share_ns);
  void ResetEnv(EnvSlot& slot);
  // Steps env `id` (injecting a planned fault); a broken output is returned.
  absl::Status StepAndCheck(int id);
  // Ready now, or (latency model) held back until its release time.
  void Release(int id, Clock::time_point began);

  EnvPoolState* state_;
  const EnvPoolOptions& options_;
  int index_;
  std::unique_ptr<EglContext> gl_;
  std::map<std::string, std::shared_ptr<Renderer>> renderers_;  // per task
  std::lognormal_distribution<double> latency_;
  std::vector<int> sweep_, ready_;
  std::vector<StepTiming> timings_;  // of the sweep's steps
};

}  // namespace rlvla3

#endif  // RLVLA3_ENVS_ENV_WORKER_H_
