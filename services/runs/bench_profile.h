// File: services/runs/bench_profile.h
// -----------------------------------------------------------------------------
// `rl-vla3 bench --profile`: LibTorch's profiler over a few inference batches
// and optimizer steps of the stages alone (stage_drivers.h), after their
// warm-up. Writes the events as a Chrome trace (open it in
// https://ui.perfetto.dev or chrome://tracing; inference on one row, the
// learner on another) and counts, per batch and per step, the LibTorch ops
// dispatched (every level) and, on a GPU, the kernels launched.
//
// Example:
//   absl::StatusOr<ProfileFigures> p =
//       ProfileStages(engine_options, parts, run_dir + "/profile_trace.json");
//   // p->inference_kernels_per_batch, p->learner_ops_per_step, ...
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_RUNS_BENCH_PROFILE_H_
#define RLVLA3_SERVICES_RUNS_BENCH_PROFILE_H_

#include <string>

#include "absl/status/statusor.h"
#include "services/engine/local_engine.h"

namespace rlvla3 {

struct ProfileFigures {
  std::string trace_path;
  int batches = 0, steps = 0;
  double inference_ops_per_batch = 0, learner_ops_per_step = 0;
  // Kernels on the GPU (CUDA events); -1 where the stage runs on the CPU.
  double inference_kernels_per_batch = -1, learner_kernels_per_step = -1;
};

absl::StatusOr<ProfileFigures> ProfileStages(const LocalEngineOptions& o,
                                             const EngineParts& parts,
                                             const std::string& trace_path,
                                             int batches = 5, int steps = 3);

// One line for the bench's table.
std::string FormatProfile(const ProfileFigures& p);

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_RUNS_BENCH_PROFILE_H_
