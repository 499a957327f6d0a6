// File: services/runs/engine_run.h
// -----------------------------------------------------------------------------
// One run of the one-process engine, as `rl-vla3 train` and `rl-vla3 bench`
// both make it: builds the engine from its setup (services/options: tasks,
// TinyVLA fresh, from a checkpoint or resumed), runs it with a live progress
// line, and writes the run folder:
// metrics.jsonl, TensorBoard event files, checkpoints; the report's sections.
//
// Example:
//   absl::StatusOr<EngineSetup> s =
//       EngineSetupFromConfig(config, run_dir, options.write_outputs);
//   absl::StatusOr<EngineRun> r = RunEngineOnce(*s, run_dir, options);
//   std::printf("%s", FormatTrainSummary(*r).c_str());
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_RUNS_ENGINE_RUN_H_
#define RLVLA3_SERVICES_RUNS_ENGINE_RUN_H_

#include <atomic>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/report_html.h"
#include "runtime/stop_signal.h"
#include "services/engine/local_engine.h"
#include "services/options/engine_setup.h"

namespace rlvla3 {

// One point per metrics interval.
struct RunSample {
  double t_s = 0;
  double env_frames_per_s = 0, trained_samples_per_s = 0;
  double success_rate = 0, lag_mean = 0;
  double busy_env = 0, busy_inference = 0, busy_learner = 0;  // percent
  double busy_gpu = -1, gpu_memory_mib = -1;  // NVML (GpuMonitor); -1: none
  // Share of the envs' time parked by the admission gate / awaiting actions.
  double envs_parked = 0, envs_awaiting = 0;  // percent
};

struct EngineRun {
  std::string run_dir;
  EngineSummary summary;
  std::vector<RunSample> samples;
  std::vector<LocalEngine::LearningPoint> curve;
  std::vector<EpisodeRecord> episodes;
  std::vector<int64_t> lag_histogram;
  std::vector<StageInterval> timeline;
  std::string checkpoint;  // final checkpoint folder (train only)
  bool interrupted = false;
  int64_t success_window = 0;  // rl.success_window
  // The GPUs' NVML utilization and memory in use, means over the metrics
  // intervals; -1 where there is no NVIDIA driver (runtime/gpu_monitor.h).
  double busy_gpu = -1, gpu_memory_mib = -1;
};

struct RunOptions {
  bool write_outputs = true;  // metrics.jsonl, tfevents, checkpoints
  std::string label;          // progress line prefix
};

// Runs the engine once as `setup` says (SIGINT/SIGTERM stop it cleanly).
absl::StatusOr<EngineRun> RunEngineOnce(const EngineSetup& setup,
                                        const std::string& run_dir,
                                        const RunOptions& options);

// The report.html sections of one or more runs (one series per run).
std::vector<ReportSection> RunReportSections(
    const std::vector<const EngineRun*>& runs);

std::string FormatTrainSummary(const EngineRun& r);

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_RUNS_ENGINE_RUN_H_
