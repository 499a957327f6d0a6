// File: services/runs/expert_eval.h
// -----------------------------------------------------------------------------
// Runs each task's scripted expert from every one of its seeded initial states
// and reports the success rate per task (`rl-vla3 expert-eval`). Physics only:
// success does not depend on the camera images, so nothing is rendered.
//
// Example:
//   absl::StatusOr<std::vector<ExpertTaskResult>> r =
//   EvaluateExperts({"open_the_drawer"}, 50, {});
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_RUNS_EXPERT_EVAL_H_
#define RLVLA3_SERVICES_RUNS_EXPERT_EVAL_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "envs/manipulation_env.h"

namespace rlvla3 {

struct ExpertTaskResult {
  std::string task;
  std::string family;
  int episodes = 0;
  int successes = 0;
  double mean_steps_to_success = 0.0;
  double wall_s = 0.0;
  double success_rate() const {
    return episodes == 0 ? 0.0 : double(successes) / episodes;
  }
};

// Evaluates the experts of `tasks` (all suite tasks if empty) over init states
// 0..episodes-1, on `threads` worker threads.
absl::StatusOr<std::vector<ExpertTaskResult>> EvaluateExperts(
    const std::vector<std::string>& tasks, int episodes, EnvOptions options,
    int threads);

// A table, one line per task, and the mean.
std::string FormatExpertResults(const std::vector<ExpertTaskResult>& results);

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_RUNS_EXPERT_EVAL_H_
