#include "services/options/engine_setup.h"

#include <torch/torch.h>

#include <algorithm>
#include <utility>

#include "services/options/cluster_options.h"
#include "services/options/engine_config.h"
#include "services/options/resume_plan.h"

namespace rlvla3 {
namespace {

RecorderOptions RecorderOptionsOf(const Config& c) {
  RecorderOptions r;
  r.progress = ProgressLine::ParseMode(c.metrics.progress);
  r.interval_s = c.metrics.interval_s;
  r.jsonl = c.metrics.jsonl;
  r.mode = c.run.mode;
  r.env_workers = std::max(1, static_cast<int>(c.threads.env_workers));
  r.envs = std::max(1, static_cast<int>(c.env.num_envs));
  r.inference_actors =
      c.run.mode == "sync"
          ? 1
          : std::max(1, static_cast<int>(c.threads.inference_actors));
  r.success_window = c.rl.success_window;
  r.prometheus = PrometheusOptionsOf(c.metrics);
  r.prometheus.labels = {{"role", "train"}, {"mode", c.run.mode}};
  return r;
}

}  // namespace

absl::StatusOr<EngineSetup> EngineSetupFromConfig(const Config& c,
                                                  const std::string& run_dir,
                                                  bool write_outputs) {
  torch::manual_seed(static_cast<uint64_t>(c.run.seed));
  const std::string checkpoints = run_dir + "/checkpoints";
  EngineSetup s;
  auto build = [&s](const Config& resumed) -> absl::Status {
    absl::StatusOr<EngineParts> parts = BuildEngineParts(resumed);
    if (!parts.ok()) return parts.status();
    s.parts = *std::move(parts);
    absl::StatusOr<LocalEngineOptions> options =
        LocalEngineOptionsFromConfig(resumed, s.parts);
    if (!options.ok()) return options.status();
    s.options = *std::move(options);
    return absl::OkStatus();
  };
  absl::StatusOr<ResumePlan> plan = ResumePlan{};
  if (write_outputs) {
    if (absl::Status s = RefuseUnusedInitCheckpoint(c, checkpoints); !s.ok()) {
      return s;
    }
    plan = PlanAndBuild(c, checkpoints, build);
  } else if (absl::Status b = build(c); !b.ok()) {
    return b;
  }
  if (!plan.ok()) return plan.status();
  if (write_outputs) {
    s.options.learner.checkpoints.dir = checkpoints;
    ApplyResumePlan(*plan, checkpoints, &s.parts, &s.options.learner);
    s.options.rollout.base_version = s.parts.version;
  }
  s.recorder = RecorderOptionsOf(c);
  return s;
}

}  // namespace rlvla3
