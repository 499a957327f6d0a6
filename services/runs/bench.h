// File: services/runs/bench.h
// -----------------------------------------------------------------------------
// `rl-vla3 bench`: measures each stage alone (env pool with a trivial policy,
// inference on synthetic observations, learner on synthetic segments), then
// runs sync and async on the same config and seeds, and reports one table:
// throughput per mode, the async/sync ratio, the pipeline limit (the slowest
// stage alone, or on a shared CPU the core budget divided by the CPU time
// each frame costs across stages, whichever is lower), the efficiency against
// it and the bottleneck with one line of advice.
//
// Example:
//   absl::StatusOr<BenchResult> r = RunBench(config, run_dir, 60.0);
//   std::printf("%s", FormatBenchTable(*r).c_str());
//   WriteBenchJson(*r, "bench.json");
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_RUNS_BENCH_H_
#define RLVLA3_SERVICES_RUNS_BENCH_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/config.h"
#include "services/runs/bench_processes.h"
#include "services/runs/bench_profile.h"
#include "services/runs/engine_run.h"
#include "services/runs/env_stage_bench.h"

namespace rlvla3 {

struct StageAlone {
  EnvStageFigures env;  // env pool, trivial policy (env_stage_bench.h)
  // A worker's time per env frame (physics + rendering), in seconds.
  double EnvSecondsPerFrame() const { return env.wall_ms_per_frame / 1e3; }
  // The env stage alone again at more workers (0: none to add), so that the
  // advice to add env workers is only given where they measured faster.
  int env_probe_workers = 0;
  double env_probe_frames_per_s = 0;
  // With --placement processes: the env stage alone as the rollout
  // processes run it (0: not measured), so that the advice to run rollout
  // processes is only given where they measured faster.
  int env_processes = 0;
  double env_processes_frames_per_s = 0;
  double inference_obs_per_s = 0;  // at the async batch size
  int inference_batch = 0;
  double learner_samples_per_s = 0;
  // Host syncs LibTorch reported per optimizer step of the real LearnerCore
  // (policies/host_sync_counter.h); -1 where it cannot count (no CUDA).
  double learner_host_syncs_per_step = -1;
  // Per env frame (a decision drives rl.execute_steps frames).
  double inference_cpu_s_per_frame = 0, learner_cpu_s_per_frame = 0;
};

struct BenchResult {
  std::string config_path, latency;
  std::string allocator;  // AllocatorInUse(): figures depend on it
  double duration_s = 0;
  int cores = 0;
  // DescribeGpus() ("CPU only", "1 x NVIDIA H100 ..."), and where each
  // stage's tensors live (env stepping is always on the CPU).
  std::string gpus, inference_device = "cpu", learner_device = "cpu";
  std::string inference_precision = "fp32", learner_precision = "fp32";
  double policy_millions = 0;  // trainable parameters, in millions
  int execute_steps = 1;
  StageAlone alone;
  EngineRun sync, async;
  // --placement processes: both modes again, as separate processes.
  ProcessRun processes_sync, processes_async;
  // Their limit (ProcessesLimit: the env stage alone across the rollout
  // processes, inference or the learner alone, or the core budget), what set
  // it, and async's efficiency against it.
  double processes_limit = 0, processes_efficiency = 0;
  std::string processes_bound;
  double ratio_async_over_sync = 0;
  double stage_limit = 0, core_limit = 0, pipeline_limit = 0;
  double pipeline_efficiency = 0;  // async / pipeline limit
  std::string bottleneck, advice;
  bool profiled = false;  // --profile
  ProfileFigures profile;
};

// What to do about an env-bound run: add env workers only where the probe
// at more workers measured at least 10% faster; else run rollout processes
// where those measured at least 10% faster.
std::string EnvBoundAdvice(const StageAlone& a);

// The rollout processes' limit in env frames/s and what sets it: "env" (the
// env stage alone across the processes), "inference", "learner" (alone), or
// "cpu": the processes share this machine's cores, so the core budget of one
// process (r.core_limit) bounds them too. {0, ""} where the env stage was not
// measured across processes.
struct ProcessesBound {
  double frames_per_s = 0;
  std::string bound;
};
ProcessesBound ProcessesLimit(const BenchResult& r);

// What to do when `stage` ("env", "inference" or "learner") alone is the
// pipeline's limit; a stage already on a GPU is not told to move to one.
std::string StageBoundAdvice(const std::string& stage, const BenchResult& r);

// Where the roles run besides one process: with `processes`, sync and async
// run again as processes (`binary` up --local).
struct BenchPlacement {
  bool processes = false;
  std::string binary;
  // `bench --profile`: trace a few inference batches and optimizer steps of
  // the stages alone into <run folder>/profile_trace.json (bench_profile.h).
  bool profile = false;
};

absl::StatusOr<BenchResult> RunBench(const Config& c,
                                     const std::string& config_path,
                                     const std::string& run_dir,
                                     double duration_s,
                                     const BenchPlacement& placement = {});
// `rl-vla3 bench --env-workers`: the config's env stage alone at each of
// `workers` env workers, `envs_per_worker` envs each (env_stage_bench.h).
absl::StatusOr<EnvScaling> RunBenchEnvScaling(const Config& c,
                                              const std::vector<int>& workers,
                                              int envs_per_worker,
                                              double seconds);
std::string FormatBenchTable(const BenchResult& r);
std::string BenchJson(const BenchResult& r);
Report BenchReport(const BenchResult& r);

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_RUNS_BENCH_H_
