// File: services/options/engine_setup.h
// -----------------------------------------------------------------------------
// What one run of the one-process engine starts from (`rl-vla3 train`, each
// mode of `rl-vla3 bench`), made from the config once: the policy (fresh,
// from rl.init_checkpoint, or resumed from the run folder's newest
// checkpoint), every role's options, and what the run's recorder needs (its
// progress line, the run's shape for the busy shares, the outputs it keeps).
//
// Example:
//   absl::StatusOr<EngineSetup> s =
//       EngineSetupFromConfig(config, run_dir, /*write_outputs=*/true);
//   absl::StatusOr<EngineRun> r = RunEngineOnce(*std::move(s), run_dir, {});
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_OPTIONS_ENGINE_SETUP_H_
#define RLVLA3_SERVICES_OPTIONS_ENGINE_SETUP_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "runtime/config.h"
#include "runtime/metrics_writer.h"
#include "runtime/prometheus_endpoint.h"
#include "services/engine/local_engine.h"

namespace rlvla3 {

// The run's recorder: one metrics interval's sample, line and outputs.
struct RecorderOptions {
  ProgressLine::Mode progress = ProgressLine::Mode::kAuto;
  double interval_s = 0;  // metrics.interval_s
  bool jsonl = false;     // metrics.jsonl
  std::string mode;       // run.mode, on the progress line
  int env_workers = 1;    // for each stage's busy share
  int envs = 1;
  int inference_actors = 1;  // 1 in sync
  int64_t success_window = 0;
  PrometheusOptions prometheus;  // port 0: no /metrics endpoint
};

struct EngineSetup {
  EngineParts parts;
  LocalEngineOptions options;
  RecorderOptions recorder;
};

// With `write_outputs`, the learner resumes from <run_dir>/checkpoints
// (rl.resume) and checkpoints there.
absl::StatusOr<EngineSetup> EngineSetupFromConfig(const Config& c,
                                                  const std::string& run_dir,
                                                  bool write_outputs);

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_OPTIONS_ENGINE_SETUP_H_
