#include "services/runs/bench.h"

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <random>
#include <thread>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "envs/task_file.h"
#include "policies/device.h"
#include "policies/host_sync_counter.h"
#include "policies/tiny_vla_policy.h"
#include "runtime/allocator.h"
#include "runtime/channels/rollout_segment.h"
#include "runtime/steady_clock.h"
#include "services/learner/learner_core.h"
#include "services/options/config_bridge.h"
#include "services/options/engine_config.h"
#include "services/options/run_variants.h"
#include "services/runs/engine_run.h"
#include "services/runs/env_stage_bench.h"
#include "services/runs/stage_drivers.h"

namespace rlvla3 {
namespace {

using Clock = std::chrono::steady_clock;

// Each stage alone is timed after its warm-up (kernels, allocator growth,
// AdamW's state) over at least `seconds` and a few units of work, so a slow
// stage's window is not one step that carries the warm-up.
void BenchInference(const LocalEngineOptions& o, const EngineParts& parts,
                    double seconds, StageAlone* out) {
  InferenceStageDriver inference(o, parts);
  inference.Batch();  // warm-up
  inference.Batch();
  int64_t n = 0, calls = 0;
  const auto t0 = Clock::now();
  while (SecondsSince(t0) < seconds || calls < 5) {
    inference.Batch();
    n += inference.batch_size();
    ++calls;
  }
  out->inference_batch = static_cast<int>(inference.batch_size());
  out->inference_obs_per_s = static_cast<double>(n) / SecondsSince(t0);
}

void BenchLearner(const LocalEngineOptions& o, const EngineParts& parts,
                  double seconds, StageAlone* out) {
  LearnerStageDriver learner(o, parts);
  learner.Step();  // warm-up
  int64_t trained = 0, steps = 0;
  const HostSyncCounter syncs;  // this thread's, while the loop runs
  const auto t0 = Clock::now();
  while (SecondsSince(t0) < seconds || steps < 3) {
    trained += learner.Step();
    ++steps;
  }
  out->learner_samples_per_s = static_cast<double>(trained) / SecondsSince(t0);
  if (syncs.available() && steps > 0) {
    out->learner_host_syncs_per_step =
        static_cast<double>(syncs.count()) / static_cast<double>(steps);
  }
}

struct StageLimit {
  const char* name;
  double frames_per_s;
};

// The slowest stage alone, in env frames/s (a decision drives
// `execute_steps` frames); the env on a tie.
StageLimit SlowestStage(const StageAlone& a, double execute_steps) {
  const StageLimit limits[] = {
      {"env", a.env.frames_per_s},
      {"inference", a.inference_obs_per_s * execute_steps},
      {"learner", a.learner_samples_per_s * execute_steps},
  };
  StageLimit slowest = limits[0];
  for (const StageLimit& l : limits) {
    if (l.frames_per_s < slowest.frames_per_s) slowest = l;
  }
  return slowest;
}

// The env stage alone at twice the workers (at most one per env and core),
// when the env stage is the slowest: the advice then says what it measured.
absl::Status ProbeMoreEnvWorkers(EnvPoolOptions pool, int cores, double seconds,
                                 StageAlone* a) {
  const int more = std::min({2 * a->env.workers, pool.num_envs, cores});
  if (more <= a->env.workers) return absl::OkStatus();
  pool.num_threads = more;
  absl::StatusOr<EnvStageFigures> probe =
      MeasureEnvStage(pool, seconds, a->env.execute_steps);
  if (!probe.ok()) return probe.status();
  a->env_probe_workers = more;
  a->env_probe_frames_per_s = probe->frames_per_s;
  return absl::OkStatus();
}

}  // namespace

namespace {

// The machine, the devices and the policy's size, for the header.
void DescribeSetup(const LocalEngineOptions& o, const EngineParts& parts,
                   BenchResult* r) {
  r->cores =
      static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  r->allocator = AllocatorInUse();
  r->gpus = DescribeGpus();
  r->inference_device = o.inference.device.str();
  r->learner_device = o.learner.core.device.str();
  r->inference_precision = o.inference.bf16 ? "bf16" : "fp32";
  r->learner_precision = o.learner.core.bf16 ? "bf16" : "fp32";
  r->execute_steps = o.rollout.execute_steps;
  const TrainablePolicy::ParameterGroups g = parts.policy->Parameters();
  for (const auto* group : {&g.weights, &g.value, &g.action_scale}) {
    for (const at::Tensor& t : *group)
      r->policy_millions += static_cast<double>(t.numel()) / 1e6;
  }
}

// Each stage alone (the env stage again at more workers when it is the
// slowest), and each stage's CPU per frame.
absl::Status BenchStagesAlone(const LocalEngineOptions& o,
                              const EngineParts& parts, double torch_threads,
                              double duration_s, BenchResult* r) {
  const EnvPoolOptions& pool = o.rollout.pool;
  const double stage_s = std::max(3.0, duration_s / 4);
  spdlog::info("bench: each stage alone for {:.0f} s", stage_s);
  absl::StatusOr<EnvStageFigures> env =
      MeasureEnvStage(pool, stage_s, o.rollout.execute_steps);
  if (!env.ok()) return env.status();
  r->alone.env = *env;
  BenchInference(o, parts, stage_s, &r->alone);
  BenchLearner(o, parts, stage_s, &r->alone);
  const double E = r->execute_steps;
  if (std::string(SlowestStage(r->alone, E).name) == "env") {
    if (absl::Status s =
            ProbeMoreEnvWorkers(pool, r->cores, stage_s, &r->alone);
        !s.ok()) {
      return s;
    }
  }
  r->alone.inference_cpu_s_per_frame =
      torch_threads / (r->alone.inference_obs_per_s * E);
  r->alone.learner_cpu_s_per_frame =
      torch_threads / (r->alone.learner_samples_per_s * E);
  return absl::OkStatus();
}

// Sync then async in this process; then, with --placement processes, both
// as processes.
absl::Status BenchModes(const Config& c, const std::string& run_dir,
                        double duration_s, const BenchPlacement& placement,
                        BenchResult* r) {
  for (const char* mode : {"sync", "async"}) {
    const Config m = ConfigInMode(c, mode);
    const std::string dir = absl::StrCat(run_dir, "/", mode);
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    RunOptions ro;
    ro.write_outputs = false;
    ro.label = "bench ";
    absl::StatusOr<EngineSetup> setup =
        EngineSetupFromConfig(m, dir, ro.write_outputs);
    if (!setup.ok()) return setup.status();
    absl::StatusOr<EngineRun> run = RunEngineOnce(*setup, dir, ro);
    if (!run.ok()) return run.status();
    (std::string(mode) == "sync" ? r->sync : r->async) = *std::move(run);
    if (run->interrupted) break;
  }
  for (const char* mode : {"sync", "async"}) {
    if (!placement.processes || StopSignalled()) break;
    absl::StatusOr<ProcessRun> p = RunProcessesOnce(
        c, mode, placement.binary, absl::StrCat(run_dir, "/processes-", mode),
        duration_s);
    if (!p.ok()) return p.status();
    (std::string(mode) == "sync" ? r->processes_sync : r->processes_async) = *p;
  }
  return absl::OkStatus();
}

// The pipeline's limit (the slowest stage alone, or the cores when the
// stages' CPU per frame together is the tighter bound), the bottleneck and
// what to do about it.
void FindBottleneck(BenchResult* r) {
  const StageLimit slowest = SlowestStage(r->alone, r->execute_steps);
  r->stage_limit = slowest.frames_per_s;
  const StageAlone& a = r->alone;
  const double cpu_per_frame = a.EnvSecondsPerFrame() +
                               a.inference_cpu_s_per_frame +
                               a.learner_cpu_s_per_frame;
  r->core_limit = cpu_per_frame > 0 ? r->cores / cpu_per_frame : 0;
  const std::string b = slowest.name;
  if (r->core_limit > 0 && r->core_limit < r->stage_limit) {
    r->pipeline_limit = r->core_limit;
    r->bottleneck = "cpu";
    r->advice = absl::StrFormat(
        "the stages together need %.2f ms of CPU per frame (env %.2f, "
        "inference "
        "%.2f, learner %.2f) and share %d cores: cut the biggest per-frame "
        "cost "
        "or add cores",
        1e3 * cpu_per_frame, 1e3 * a.EnvSecondsPerFrame(),
        1e3 * a.inference_cpu_s_per_frame, 1e3 * a.learner_cpu_s_per_frame,
        r->cores);
  } else {
    r->pipeline_limit = r->stage_limit;
    r->bottleneck = b;
    r->advice = StageBoundAdvice(b, *r);
  }
  r->pipeline_efficiency =
      r->pipeline_limit > 0
          ? r->async.summary.env_frames_per_s / r->pipeline_limit
          : 0;
  if (r->pipeline_efficiency > 1.05) {
    // The pipeline cannot beat its slowest stage alone: the limit is wrong
    // (a stage alone measured slower than it runs in the pipeline).
    r->advice += absl::StrFormat(
        " (async ran at %.2f of the limit: a stage alone measured slow; the "
        "limit is understated, not the pipeline fast)",
        r->pipeline_efficiency);
  }
  if (r->processes_async.ran) {
    const ProcessesBound p = ProcessesLimit(*r);
    r->processes_limit = p.frames_per_s;
    r->processes_bound = p.bound;
    r->processes_efficiency =
        r->processes_limit > 0
            ? r->processes_async.env_frames_per_s / r->processes_limit
            : 0;
  }
}

}  // namespace

absl::StatusOr<BenchResult> RunBench(const Config& config,
                                     const std::string& config_path,
                                     const std::string& run_dir,
                                     double duration_s,
                                     const BenchPlacement& placement) {
  if (absl::Status s = CheckRoleDevices(config, true, true); !s.ok()) return s;
  BenchResult r;
  r.config_path = config_path;
  r.duration_s = duration_s;
  const Config c = BenchConfig(config, duration_s);
  absl::StatusOr<EngineParts> parts = BuildEngineParts(c);
  if (!parts.ok()) return parts.status();
  absl::StatusOr<LocalEngineOptions> engine =
      LocalEngineOptionsFromConfig(c, *parts);
  if (!engine.ok()) return engine.status();
  DescribeSetup(*engine, *parts, &r);
  r.latency = engine->rollout.pool.latency.Describe();
  // The CPU a stage's torch work takes: the threads it was given at start.
  const double torch_threads = at::get_num_threads();
  if (absl::Status s =
          BenchStagesAlone(*engine, *parts, torch_threads, duration_s, &r);
      !s.ok()) {
    return s;
  }
  if (placement.profile) {
    absl::StatusOr<ProfileFigures> p =
        ProfileStages(*engine, *parts, run_dir + "/profile_trace.json");
    if (!p.ok()) return p.status();
    r.profiled = true;
    r.profile = *p;
  }
  if (placement.processes) {
    absl::StatusOr<EnvProcessesRun> e =
        RunEnvStageAsProcesses(c, placement.binary, run_dir + "/env-processes",
                               std::max(3.0, duration_s / 4));
    if (!e.ok()) return e.status();
    r.alone.env_processes = e->processes;
    r.alone.env_processes_frames_per_s = e->frames_per_s;
  }
  if (absl::Status s = BenchModes(c, run_dir, duration_s, placement, &r);
      !s.ok()) {
    return s;
  }
  r.ratio_async_over_sync =
      r.sync.summary.env_frames_per_s > 0
          ? r.async.summary.env_frames_per_s / r.sync.summary.env_frames_per_s
          : 0;
  FindBottleneck(&r);
  return r;
}

absl::StatusOr<EnvScaling> RunBenchEnvScaling(const Config& c,
                                              const std::vector<int>& workers,
                                              int envs_per_worker,
                                              double seconds) {
  absl::StatusOr<EnvPoolOptions> pool = EnvPoolOptionsOfRun(c);
  if (!pool.ok()) return pool.status();
  return RunEnvScaling(*pool, workers, envs_per_worker, seconds,
                       EnvStageImageIntervals(c));
}

ProcessesBound ProcessesLimit(const BenchResult& r) {
  if (r.alone.env_processes <= 0) return {};
  // The stages alone with the env stage as the processes ran it; they share
  // this machine's cores as one process does.
  StageAlone across = r.alone;
  across.env.frames_per_s = r.alone.env_processes_frames_per_s;
  const StageLimit s = SlowestStage(across, r.execute_steps);
  if (r.core_limit > 0 && r.core_limit < s.frames_per_s) {
    return {r.core_limit, "cpu"};
  }
  return {s.frames_per_s, s.name};
}

std::string EnvBoundAdvice(const StageAlone& a) {
  const std::string rest =
      "or lower the image resolution; inference and learner have headroom";
  if (a.env_probe_workers == 0) {
    return absl::StrCat(
        "env-bound (", a.env.workers,
        " env workers, no more cores or envs to give them): add envs (latency "
        "hides behind more), try the other env.render_backend, ",
        rest);
  }
  const std::string measured = absl::StrFormat(
      "%d env workers: %.0f frames/s alone, %d: %.0f", a.env.workers,
      a.env.frames_per_s, a.env_probe_workers, a.env_probe_frames_per_s);
  if (a.env_probe_frames_per_s >= 1.1 * a.env.frames_per_s) {
    return absl::StrCat("env-bound: add env workers (", measured, ") or envs, ",
                        rest);
  }
  if (a.env_processes > 0 &&
      a.env_processes_frames_per_s >= 1.1 * a.env.frames_per_s) {
    return absl::StrFormat(
        "env-bound, and more env workers in one process do not help here "
        "(%s), rollout processes do (%d processes: %.0f frames/s alone): run "
        "the envs as cluster.rollout_workers processes (up --local, up) of at "
        "most %d env workers each",
        measured, a.env_processes, a.env_processes_frames_per_s, a.env.workers);
  }
  return absl::StrCat(
      "env-bound, and more env workers do not help here (", measured,
      "): see where a frame's time goes (env per frame), try the other "
      "env.render_backend",
      a.env_processes > 0
          ? ""
          : ", measure rollout processes (--placement processes)",
      ", ", rest);
}

// What to do when `stage` alone is the pipeline's limit.
std::string StageBoundAdvice(const std::string& stage, const BenchResult& r) {
  if (stage == "env") return EnvBoundAdvice(r.alone);
  const bool gpu = absl::StartsWith(
      stage == "inference" ? r.inference_device : r.learner_device, "cuda");
  if (stage == "inference") {
    return absl::StrCat(
        "inference-bound: raise batcher.max_batch / max_wait_ms, add an "
        "inference actor",
        gpu ? "" : ", or serve inference from a GPU (inference.device)");
  }
  return absl::StrCat(
      "learner-bound: raise rl.execute_steps or rl.micro_batch",
      gpu ? ", or add data-parallel learner ranks (cluster.learner_ranks)"
          : ", or run the learner on a GPU (learner.device)",
      "; envs wait on admission control");
}

}  // namespace rlvla3
