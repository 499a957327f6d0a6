// File: services/runs/env_stage_bench.h
// -----------------------------------------------------------------------------
// The env stage alone: an env pool stepped with zero actions as fast as its
// workers go (no inference, no learner). MeasureEnvStage is one point (the
// bench's "stages alone" uses it); RunEnvScaling repeats it at several worker
// counts with a fixed number of envs per worker (`rl-vla3 bench
// --env-workers 1,2,4,8`), to show how env stepping scales on a machine and
// render backend (the config's latency model, if any, stays on): frames/s,
// the speed-up over the first point, the process's
// CPU time per frame (every thread's: the workers', llvmpipe's, the GL
// driver's), each worker's wall time per frame and its phases.
//
// Example:
//   absl::StatusOr<EnvScaling> s = RunEnvScaling(
//       pool_options, {1, 2, 4, 8}, /*envs_per_worker=*/8, 5.0, {1, 4});
//   if (s.ok()) std::printf("%s", FormatEnvScaling(*s).c_str());
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_RUNS_ENV_STAGE_BENCH_H_
#define RLVLA3_SERVICES_RUNS_ENV_STAGE_BENCH_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "envs/env_pool.h"

namespace rlvla3 {

struct EnvStageFigures {
  int workers = 0;
  int envs = 0;
  int execute_steps = 1;  // an env's images drawn every this many steps
  std::string backend;    // env.render_backend as the pool resolved it
  std::string readback;   // env.readback as the pool resolved it
  double frames_per_s = 0;
  // A worker's wall time per frame (its step, with its share of the sweep's
  // readback), and the whole process's CPU time per frame.
  double wall_ms_per_frame = 0;
  double cpu_ms_per_frame = 0;
  // Its phases per frame, ms: physics, render, readback, hand-off (EnvPool).
  double physics_ms = 0, render_ms = 0, readback_ms = 0, handoff_ms = 0;
  // The distribution of one step's wall time (latency model excluded), from
  // a fixed-size sample of the steps: its cv, median and 99th percentile.
  double step_ms_cv = 0, step_ms_p50 = 0, step_ms_p99 = 0;
  // Resident memory the pool added, per env (its models, data, buffers).
  double host_bytes_per_env = 0;
};

// Steps the pool made from `options` for `seconds`. With execute_steps E >
// 1 an env's cameras are drawn on every E-th step only, as the rollout
// worker draws a decision's last executed chunk step only (rl.execute_steps).
absl::StatusOr<EnvStageFigures> MeasureEnvStage(const EnvPoolOptions& options,
                                                double seconds,
                                                int execute_steps = 1);

struct EnvScaling {
  int width = 0, height = 0;
  std::string readback;  // as asked (env.readback); auto resolves per point
  double seconds = 0;    // per point
  int cores = 0;
  std::vector<EnvStageFigures> points;
};

// `base` at each worker count in `workers`, with envs_per_worker envs each,
// once per value of `execute_steps` (each a MeasureEnvStage point).
absl::StatusOr<EnvScaling> RunEnvScaling(
    const EnvPoolOptions& base, const std::vector<int>& workers,
    int envs_per_worker, double seconds,
    const std::vector<int>& execute_steps = {1});
std::string FormatEnvScaling(const EnvScaling& s);
std::string EnvScalingJson(const EnvScaling& s);

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_RUNS_ENV_STAGE_BENCH_H_
