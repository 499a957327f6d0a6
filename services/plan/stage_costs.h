// File: services/plan/stage_costs.h
// -----------------------------------------------------------------------------
// A stage-cost profile: what one node measured of each stage alone, the
// input `rl-vla3 plan` sizes a cluster from. `rl-vla3 bench --stage-costs
// FILE` writes it (services/runs/stage_costs_bench.h); ParseStageCosts reads
// it back strictly (every number finite and in range, every list bounded):
// the file is a door, and a hand-edited or foreign one is refused naming
// the key, never trusted.
//
//   env        a worker's compute per frame (mean, cv, p50, p99; phases),
//              the latency model's wait, host memory per env
//   inference  seconds per batch at several batch sizes (device, precision)
//   learner    seconds per optimizer step at several global batches
//   allreduce  seconds per all-reduce at several sizes (backend, link)
//   wire       the roles' messages between processes (optional)
//   policy     parameters, checkpoint and optimizer bytes
//
// Fits: inference fixed + per_obs x batch, learner per_step + per_sample x
// samples, all-reduce latency + bytes / bandwidth (least squares over the
// measured points, never below zero).
//
// Example:
//   absl::StatusOr<StageCostProfile> p = ReadStageCosts("costs.json");
//   LinearFit infer = p->inference.Fit();   // infer.fixed, infer.slope
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_PLAN_STAGE_COSTS_H_
#define RLVLA3_SERVICES_PLAN_STAGE_COSTS_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace rlvla3 {

// y = fixed + slope * x.
struct LinearFit {
  double fixed = 0, slope = 0;
  double At(double x) const { return fixed + slope * x; }
};

// (x, seconds) points; least squares, clamped to fixed >= 0, slope >= 0.
LinearFit FitLine(const std::vector<std::pair<double, double>>& points);

struct EnvCosts {
  int workers = 1, envs = 1;
  int image_width = 0, image_height = 0, cameras = 0;
  int execute_steps = 1;
  std::string backend;  // render backend ("none" without cameras)
  // A worker's compute per frame, seconds.
  double step_s_mean = 0, step_s_cv = 0, step_s_p50 = 0, step_s_p99 = 0;
  double physics_ms = 0, render_ms = 0, readback_ms = 0, handoff_ms = 0;
  double latency_s_mean = 0, latency_s_cv = 0;  // the latency model's wait
  double host_bytes_per_env = 0;
};

struct Timed {
  double x = 0;        // batch size, samples or bytes
  double seconds = 0;  // per call
};

struct InferenceCosts {
  std::string device = "cpu", precision = "fp32";
  int threads = 1;
  std::vector<Timed> by_batch;
  LinearFit Fit() const;
};

struct LearnerCosts {
  std::string device = "cpu", precision = "fp32";
  int threads = 1, micro_batch = 0, nice = 0;
  std::vector<Timed> by_samples;  // one optimizer step over x samples
  LinearFit Fit() const;
};

struct AllReduceCosts {
  std::string backend = "gloo", link = "loopback";
  std::vector<Timed> by_bytes;  // empty: not measured
  LinearFit Fit() const;        // seconds = fixed + bytes * slope
};

// The wire between processes on one node (loopback gRPC, both ends in one
// process): CPU seconds per observation's round trip and its wall time
// beyond that CPU, per sample of a segment, per weight version to one
// inference server. Absent (a profile from before): zeros.
struct WireCosts {
  double observation_cpu_s = 0, observation_wait_s = 0;
  double sample_cpu_s = 0, weights_cpu_s = 0;
};

struct PolicyCosts {
  int64_t parameters = 0;
  int64_t checkpoint_bytes = 0;
  int64_t optimizer_bytes = 0;  // AdamW's state, one rank, unsharded
};

struct StageCostProfile {
  std::string config;  // the config measured
  std::string gpus;    // "CPU only", "1 x NVIDIA H200 ..."
  int cores = 0;
  EnvCosts env;
  InferenceCosts inference;
  LearnerCosts learner;
  AllReduceCosts allreduce;
  WireCosts wire;
  PolicyCosts policy;
};

std::string StageCostsJson(const StageCostProfile& p);
// `origin` names the file in every error: "costs.json: env.step_s_mean:
// -1 (a number from 0 to 3600)".
absl::StatusOr<StageCostProfile> ParseStageCosts(const std::string& text,
                                                 const std::string& origin);
// At most 1 MiB, a regular file, then ParseStageCosts.
absl::StatusOr<StageCostProfile> ReadStageCosts(const std::string& path);

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_PLAN_STAGE_COSTS_H_
