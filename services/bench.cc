#include "services/bench.h"

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <random>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "policies/device.h"
#include "policies/tiny_vla_policy.h"
#include "runtime/allocator.h"
#include "runtime/rollout_segment.h"
#include "services/config_bridge.h"
#include "services/engine_config.h"
#include "services/learner/learner_core.h"
#include "services/train.h"

namespace rlvla3 {
namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The env pool alone, stepping every env with a zero action.
absl::Status BenchEnvs(const EnvPoolOptions& options, double seconds,
                       StageAlone* out) {
  absl::StatusOr<std::unique_ptr<EnvPool>> pool = EnvPool::Create(options);
  if (!pool.ok()) return pool.status();
  EnvPool& p = **pool;
  std::vector<int> ready;
  std::vector<float> zeros;
  const auto t0 = Clock::now();
  const uint64_t steps0 = p.stats().steps;
  while (Since(t0) < seconds) {
    ready.clear();
    if (absl::Status s = p.Recv(1, absl::Seconds(30), &ready); !s.ok())
      return s;
    zeros.assign(ready.size() * kActionDim, 0.0f);
    if (absl::Status s = p.Send(ready, zeros); !s.ok()) return s;
  }
  const double wall = Since(t0);
  const EnvPoolStats st = p.stats();
  out->env_frames_per_s = static_cast<double>(st.steps - steps0) / wall;
  out->env_cpu_s_per_frame = st.step_ms.count > 0 ? st.step_ms.mean() / 1e3 : 0;
  out->env_physics_ms = st.phases.physics_ms;
  out->env_render_ms = st.phases.render_ms;
  out->env_readback_ms = st.phases.readback_ms;
  out->env_handoff_ms = st.handoff_ms;
  out->env_workers = p.num_threads();
  p.Close();
  return absl::OkStatus();
}

PolicyInput SyntheticInput(const Config& c, int64_t B, int64_t text_len) {
  const int64_t h = c.env.image_height, w = c.env.image_width;
  PolicyInput in;
  in.agentview = torch::randint(0, 256, {B, h, w, 3}, torch::kByte);
  in.wrist = torch::randint(0, 256, {B, h, w, 3}, torch::kByte);
  in.proprio = torch::randn({B, kProprioDim});
  in.text = torch::randint(2, 8, {B, text_len}, torch::kLong);
  in.text_len = torch::full({B}, text_len, torch::kLong);
  return in;
}

void BenchInference(const Config& c, const EngineParts& parts, double seconds,
                    StageAlone* out) {
  const std::shared_ptr<TrainablePolicy> policy = parts.policy->Snapshot(0);
  const at::Device device(c.inference.device);
  policy->To(device);
  const int64_t B = std::min<int64_t>(c.batcher.max_batch, c.env.num_envs);
  const PolicyInput in = SyntheticInput(c, B, parts.policy->max_text_len());
  // As an actor: the batch goes to the device, the values come back (the
  // batch's host sync).
  const bool bf16 = c.inference.precision == "bf16";
  auto act = [&] {
    AutocastGuard autocast(device, bf16);
    policy->Act(ToDevice(in, device), false).values.to(torch::kCPU);
  };
  act();  // warm-up
  int64_t n = 0;
  const auto t0 = Clock::now();
  while (Since(t0) < seconds) {
    act();
    n += B;
  }
  out->inference_batch = static_cast<int>(B);
  out->inference_obs_per_s = static_cast<double>(n) / Since(t0);
}

void BenchLearner(const Config& c, const EngineParts& parts, double seconds,
                  StageAlone* out) {
  // Trains the bench's own copy (the engine runs build theirs).
  const int64_t L = parts.policy->max_text_len();
  at::Tensor text = torch::randint(2, 8, {1, L}, torch::kLong);
  at::Tensor lens = torch::full({1}, L, torch::kLong);
  LearnerOptions lo = LearnerOptionsFromConfig(c.rl);
  lo.algorithm = "ppo";  // synthetic segments: no GRPO groups
  lo.global_units = c.env.num_envs * c.rl.rollout_len;
  lo.max_policy_lag = 1000000;
  lo.device = at::Device(c.learner.device);
  lo.publish_device = at::Device(c.inference.device);
  lo.bf16 = c.learner.precision == "bf16";
  LearnerCore learner(parts.policy, text, lens, lo, 0);
  SegmentShape shape;
  shape.width = static_cast<int>(c.env.image_width);
  shape.height = static_cast<int>(c.env.image_height);
  shape.chunk = parts.policy->chunk();
  shape.capacity = static_cast<int>(c.rl.rollout_len);
  std::vector<std::unique_ptr<RolloutSegment>> segs;
  std::mt19937 rng(static_cast<uint32_t>(c.run.seed));
  for (int64_t i = 0; i < c.env.num_envs; ++i) {
    auto s = std::make_unique<RolloutSegment>(shape);
    for (auto& b : s->agentview) b = static_cast<uint8_t>(rng());
    for (auto& b : s->wrist) b = static_cast<uint8_t>(rng());
    for (auto& b : s->tokens) b = static_cast<uint8_t>(rng());
    segs.push_back(std::move(s));
  }
  int64_t trained = 0;
  const auto t0 = Clock::now();
  while (Since(t0) < seconds) {
    std::vector<RolloutSegment*> batch;
    for (auto& s : segs) {
      s->Clear();
      s->n = shape.capacity;
      s->has_bootstrap = true;
      std::fill(s->executed.begin(), s->executed.end(), 1);
      std::fill(s->log_probs.begin(), s->log_probs.end(), -5.0f);
      for (int t = 0; t < s->n; ++t)
        s->rewards[t] = static_cast<float>(rng() % 2);
      batch.push_back(s.get());
    }
    learner.Add(batch);
    while (learner.CanTrain()) learner.TrainMicroBatch();
    if (learner.ReadyToStep()) trained += learner.Step().samples;
    learner.MakeSnapshot();  // the publish cost is the learner's too
    learner.TakeConsumed();
  }
  out->learner_samples_per_s = static_cast<double>(trained) / Since(t0);
}

std::string Pct(double v) { return absl::StrFormat("%.0f%%", v); }

struct StageLimit {
  const char* name;
  double frames_per_s;
};

// The slowest stage alone, in env frames/s (a decision drives
// `execute_steps` frames); the env on a tie.
StageLimit SlowestStage(const StageAlone& a, double execute_steps) {
  const StageLimit limits[] = {
      {"env", a.env_frames_per_s},
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
  const int more = std::min({2 * a->env_workers, pool.num_envs, cores});
  if (more <= a->env_workers) return absl::OkStatus();
  pool.num_threads = more;
  StageAlone probe;
  if (absl::Status s = BenchEnvs(pool, seconds, &probe); !s.ok()) return s;
  a->env_probe_workers = more;
  a->env_probe_frames_per_s = probe.env_frames_per_s;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<BenchResult> RunBench(const Config& config,
                                     const std::string& config_path,
                                     const std::string& run_dir,
                                     double duration_s,
                                     const BenchPlacement& placement) {
  BenchResult r;
  r.config_path = config_path;
  r.duration_s = duration_s;
  r.cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  r.allocator = AllocatorInUse();
  if (absl::Status s = CheckRoleDevices(config, true, true); !s.ok()) return s;
  r.gpus = DescribeGpus();
  r.inference_device = config.inference.device;
  r.learner_device = config.learner.device;
  r.inference_precision = config.inference.precision;
  r.learner_precision = config.learner.precision;
  r.execute_steps = static_cast<int>(config.rl.execute_steps);
  Config c = config;
  c.rl.duration_s = duration_s;
  c.rl.max_steps = 0;
  absl::StatusOr<EngineParts> parts = BuildEngineParts(c);
  if (!parts.ok()) return parts.status();
  {
    const TrainablePolicy::ParameterGroups g = parts->policy->Parameters();
    for (const auto* group : {&g.weights, &g.value, &g.action_scale}) {
      for (const at::Tensor& t : *group)
        r.policy_millions += static_cast<double>(t.numel()) / 1e6;
    }
  }
  absl::StatusOr<LocalEngineOptions> engine =
      LocalEngineOptionsFromConfig(c, *parts);
  if (!engine.ok()) return engine.status();
  const EnvPoolOptions& pool = engine->rollout.pool;
  r.latency = pool.latency.Describe();
  const double stage_s = std::max(3.0, duration_s / 4);
  spdlog::info("bench: each stage alone for {:.0f} s", stage_s);
  if (absl::Status s = BenchEnvs(pool, stage_s, &r.alone); !s.ok()) return s;
  BenchInference(c, *parts, stage_s, &r.alone);
  BenchLearner(c, *parts, stage_s, &r.alone);
  const double E = r.execute_steps;
  if (std::string(SlowestStage(r.alone, E).name) == "env") {
    if (absl::Status s = ProbeMoreEnvWorkers(pool, r.cores, stage_s, &r.alone);
        !s.ok()) {
      return s;
    }
  }
  r.alone.inference_cpu_s_per_frame =
      static_cast<double>(c.threads.torch_intra_op) /
      (r.alone.inference_obs_per_s * E);
  r.alone.learner_cpu_s_per_frame =
      static_cast<double>(c.threads.torch_intra_op) /
      (r.alone.learner_samples_per_s * E);

  for (const char* mode : {"sync", "async"}) {
    Config m = c;
    m.run.mode = mode;
    const std::string dir = absl::StrCat(run_dir, "/", mode);
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    RunOptions ro;
    ro.write_outputs = false;
    ro.label = "bench ";
    absl::StatusOr<EngineRun> run = RunEngineOnce(m, dir, ro);
    if (!run.ok()) return run.status();
    (std::string(mode) == "sync" ? r.sync : r.async) = *std::move(run);
    if (run->interrupted) break;
  }
  for (const char* mode : {"sync", "async"}) {
    if (!placement.processes || StopSignalled()) break;
    absl::StatusOr<ProcessRun> p = RunProcessesOnce(
        c, mode, placement.binary, absl::StrCat(run_dir, "/processes-", mode),
        duration_s);
    if (!p.ok()) return p.status();
    (std::string(mode) == "sync" ? r.processes_sync : r.processes_async) = *p;
  }
  r.ratio_async_over_sync =
      r.sync.summary.env_frames_per_s > 0
          ? r.async.summary.env_frames_per_s / r.sync.summary.env_frames_per_s
          : 0;
  const StageLimit slowest = SlowestStage(r.alone, E);
  r.stage_limit = slowest.frames_per_s;
  const double cpu_per_frame = r.alone.env_cpu_s_per_frame +
                               r.alone.inference_cpu_s_per_frame +
                               r.alone.learner_cpu_s_per_frame;
  r.core_limit = cpu_per_frame > 0 ? r.cores / cpu_per_frame : 0;
  if (r.core_limit > 0 && r.core_limit < r.stage_limit) {
    r.pipeline_limit = r.core_limit;
    r.bottleneck = "cpu";
    r.advice = absl::StrFormat(
        "the stages together need %.2f ms of CPU per frame (env %.2f, "
        "inference "
        "%.2f, learner %.2f) and share %d cores: cut the biggest per-frame "
        "cost "
        "or add cores",
        1e3 * cpu_per_frame, 1e3 * r.alone.env_cpu_s_per_frame,
        1e3 * r.alone.inference_cpu_s_per_frame,
        1e3 * r.alone.learner_cpu_s_per_frame, r.cores);
  } else {
    r.pipeline_limit = r.stage_limit;
    r.bottleneck = slowest.name;
    const std::string b = slowest.name;
    if (b == "env") {
      r.advice = EnvBoundAdvice(r.alone);
    } else if (b == "inference") {
      r.advice =
          "inference-bound: raise batcher.max_batch / max_wait_ms, add an "
          "inference actor, or serve inference from a GPU";
    } else {
      r.advice =
          "learner-bound: raise rl.execute_steps or rl.micro_batch, or run the "
          "learner on a GPU; envs wait on admission control";
    }
  }
  r.pipeline_efficiency =
      r.pipeline_limit > 0 ? r.async.summary.env_frames_per_s / r.pipeline_limit
                           : 0;
  return r;
}

std::string EnvBoundAdvice(const StageAlone& a) {
  const std::string rest =
      "or lower the image resolution; inference and learner have headroom";
  if (a.env_probe_workers == 0) {
    return absl::StrCat(
        "env-bound (", a.env_workers,
        " env workers, no more cores or envs to give them): add envs (latency "
        "hides behind more), try the other env.render_backend, ",
        rest);
  }
  const std::string measured = absl::StrFormat(
      "%d env workers: %.0f frames/s alone, %d: %.0f", a.env_workers,
      a.env_frames_per_s, a.env_probe_workers, a.env_probe_frames_per_s);
  if (a.env_probe_frames_per_s >= 1.1 * a.env_frames_per_s) {
    return absl::StrCat("env-bound: add env workers (", measured, ") or envs, ",
                        rest);
  }
  return absl::StrCat(
      "env-bound, and more env workers do not help here (", measured,
      "): see where a frame's time goes (env per frame), try the other "
      "env.render_backend, ",
      rest);
}

std::string FormatBenchTable(const BenchResult& r) {
  const EngineSummary& s = r.sync.summary;
  const EngineSummary& a = r.async.summary;
  std::string out = absl::StrFormat(
      "rl-vla3 bench: %s, %.0f s per mode, %d cores, allocator: %s, latency "
      "model: %s\n"
      "devices: %s; env cpu, inference %s (%s), learner %s (%s); policy %.2f M "
      "parameters\n"
      "stages alone: env %.0f frames/s (%.2f ms CPU/frame) | inference %.0f "
      "obs/s at batch %d (= %.0f frames/s) | learner %.0f samples/s (= %.0f "
      "frames/s)\n"
      "env per frame: physics %.2f ms, render %.2f ms, readback %.2f ms, "
      "hand-off %.3f ms\n\n",
      r.config_path, r.duration_s, r.cores, r.allocator, r.latency, r.gpus,
      r.inference_device, r.inference_precision, r.learner_device,
      r.learner_precision, r.policy_millions, r.alone.env_frames_per_s,
      1e3 * r.alone.env_cpu_s_per_frame, r.alone.inference_obs_per_s,
      r.alone.inference_batch, r.alone.inference_obs_per_s * r.execute_steps,
      r.alone.learner_samples_per_s,
      r.alone.learner_samples_per_s * r.execute_steps, r.alone.env_physics_ms,
      r.alone.env_render_ms, r.alone.env_readback_ms, r.alone.env_handoff_ms);
  absl::StrAppendFormat(&out, "%-28s %12s %12s %10s\n", "", "sync", "async",
                        "async/sync");
  auto line = [&](const std::string& name, const std::string& sv,
                  const std::string& av, const std::string& ratio) {
    absl::StrAppendFormat(&out, "%-28s %12s %12s %10s\n", name, sv, av, ratio);
  };
  auto f0 = [](double v) { return absl::StrFormat("%.0f", v); };
  auto f2 = [](double v) { return absl::StrFormat("%.2f", v); };
  auto ratio = [](double x, double y) {
    return y > 0 ? absl::StrFormat("%.2fx", x / y) : std::string("-");
  };
  line("env frames/s", f0(s.env_frames_per_s), f0(a.env_frames_per_s),
       ratio(a.env_frames_per_s, s.env_frames_per_s));
  line("trained samples/s", f0(s.trained_samples_per_s),
       f0(a.trained_samples_per_s),
       ratio(a.trained_samples_per_s, s.trained_samples_per_s));
  line("optimizer steps", f0(s.optimizer_steps), f0(a.optimizer_steps), "");
  line("s per optimizer step", f2(s.s_per_step), f2(a.s_per_step), "");
  line("busy env / worker", Pct(s.busy_env), Pct(a.busy_env), "");
  line("busy inference / actor", Pct(s.busy_inference), Pct(a.busy_inference),
       "");
  line("busy learner", Pct(s.busy_learner), Pct(a.busy_learner), "");
  line("inference batch (mean)", f2(s.inference_batch_mean),
       f2(a.inference_batch_mean), "");
  line("policy lag mean / max",
       absl::StrFormat("%.2f / %.0f", s.lag_mean, s.lag_max),
       absl::StrFormat("%.2f / %.0f", a.lag_mean, a.lag_max), "");
  line("dropped (stale) samples", f0(s.dropped_samples), f0(a.dropped_samples),
       "");
  line("episodes / successes",
       absl::StrFormat("%d / %d", s.episodes, s.successes),
       absl::StrFormat("%d / %d", a.episodes, a.successes), "");
  line("rolling success", Pct(100 * s.rolling_success),
       Pct(100 * a.rolling_success), "");
  absl::StrAppendFormat(
      &out,
      "\npipeline limit: %.0f frames/s (slowest stage alone %.0f, core budget "
      "%d "
      "cores / %.2f ms CPU per frame = %.0f)\n"
      "async efficiency vs limit: %.2f | async/sync env frames/s: %.2fx\n"
      "bottleneck: %s - %s\n",
      r.pipeline_limit, r.stage_limit, r.cores,
      1e3 * (r.alone.env_cpu_s_per_frame + r.alone.inference_cpu_s_per_frame +
             r.alone.learner_cpu_s_per_frame),
      r.core_limit, r.pipeline_efficiency, r.ratio_async_over_sync,
      r.bottleneck, r.advice);
  if (r.processes_sync.ran || r.processes_async.ran) {
    const ProcessRun& ps = r.processes_sync;
    const ProcessRun& pa = r.processes_async;
    auto v0 = [&](const ProcessRun& p, double v) {
      return p.ran ? f0(v) : std::string("-");
    };
    absl::StrAppendFormat(
        &out,
        "\nacross processes (rl-vla3 up --local: %d processes, gRPC on "
        "loopback)\n",
        std::max(ps.processes, pa.processes));
    line("", "sync", "async", "async/sync");
    line("env frames/s", v0(ps, ps.env_frames_per_s),
         v0(pa, pa.env_frames_per_s),
         ratio(pa.env_frames_per_s, ps.env_frames_per_s));
    line("trained samples/s", v0(ps, ps.trained_samples_per_s),
         v0(pa, pa.trained_samples_per_s),
         ratio(pa.trained_samples_per_s, ps.trained_samples_per_s));
    line("optimizer steps", v0(ps, ps.optimizer_steps),
         v0(pa, pa.optimizer_steps), "");
    line("env frames/s vs 1 process",
         ratio(ps.env_frames_per_s, s.env_frames_per_s),
         ratio(pa.env_frames_per_s, a.env_frames_per_s), "");
  }
  return out;
}

std::string BenchJson(const BenchResult& r) {
  auto processes = [](const ProcessRun& p) -> std::string {
    if (!p.ran) return "null";
    return absl::StrFormat(
        "{\"processes\": %d, \"window_s\": %.2f, \"env_frames_per_s\": %.3f, "
        "\"trained_samples_per_s\": %.3f, \"optimizer_steps\": %d}",
        p.processes, p.window_s, p.env_frames_per_s, p.trained_samples_per_s,
        p.optimizer_steps);
  };
  auto mode = [](const EngineSummary& s) {
    return absl::StrFormat(
        "{\"env_frames_per_s\": %.3f, \"trained_samples_per_s\": %.3f, "
        "\"optimizer_steps\": %d, \"s_per_step\": %.4f, \"busy_pct\": "
        "{\"env\": %.2f, "
        "\"inference\": %.2f, \"learner\": %.2f}, \"inference_batch_mean\": "
        "%.3f, "
        "\"policy_lag\": {\"mean\": %.3f, \"max\": %.0f}, \"dropped_samples\": "
        "%d, "
        "\"episodes\": %d, \"successes\": %d, \"rolling_success\": %.4f, "
        "\"wall_s\": %.2f}",
        s.env_frames_per_s, s.trained_samples_per_s, s.optimizer_steps,
        s.s_per_step, s.busy_env, s.busy_inference, s.busy_learner,
        s.inference_batch_mean, s.lag_mean, s.lag_max, s.dropped_samples,
        s.episodes, s.successes, s.rolling_success, s.wall_s);
  };
  return absl::StrFormat(
      "{\n  \"config\": \"%s\",\n  \"latency_model\": \"%s\",\n  "
      "\"duration_s\": %.1f,\n"
      "  \"cores\": %d,\n  \"allocator\": \"%s\",\n"
      "  \"gpus\": \"%s\",\n  \"devices\": {\"env\": \"cpu\", \"inference\": "
      "\"%s\", \"inference_precision\": \"%s\", \"learner\": \"%s\", "
      "\"learner_precision\": \"%s\"},\n"
      "  \"policy_parameters_millions\": %.3f,\n"
      "  \"stages_alone\": "
      "{\"env_frames_per_s\": %.3f, "
      "\"env_cpu_s_per_frame\": %.6f, \"env_physics_ms\": %.4f, "
      "\"env_render_ms\": %.4f, \"env_readback_ms\": %.4f, "
      "\"env_handoff_ms\": %.4f, \"env_workers\": %d, "
      "\"env_probe_workers\": %d, \"env_probe_frames_per_s\": %.3f, "
      "\"inference_obs_per_s\": %.3f, "
      "\"inference_batch\": %d, "
      "\"inference_cpu_s_per_frame\": %.6f, \"learner_samples_per_s\": %.3f, "
      "\"learner_cpu_s_per_frame\": %.6f},\n"
      "  \"modes\": {\n    \"sync\": %s,\n    \"async\": %s\n  },\n"
      "  \"ratio_async_over_sync\": %.4f,\n  \"pipeline_limit_frames_per_s\": "
      "%.3f,\n"
      "  \"stage_limit_frames_per_s\": %.3f,\n  \"core_limit_frames_per_s\": "
      "%.3f,\n"
      "  \"pipeline_efficiency\": %.4f,\n  \"bottleneck\": \"%s\",\n  "
      "\"advice\": \"%s\",\n  \"processes\": {\"sync\": %s, \"async\": "
      "%s}\n}\n",
      r.config_path, r.latency, r.duration_s, r.cores, r.allocator, r.gpus,
      r.inference_device, r.inference_precision, r.learner_device,
      r.learner_precision, r.policy_millions, r.alone.env_frames_per_s,
      r.alone.env_cpu_s_per_frame, r.alone.env_physics_ms,
      r.alone.env_render_ms, r.alone.env_readback_ms, r.alone.env_handoff_ms,
      r.alone.env_workers, r.alone.env_probe_workers,
      r.alone.env_probe_frames_per_s, r.alone.inference_obs_per_s,
      r.alone.inference_batch, r.alone.inference_cpu_s_per_frame,
      r.alone.learner_samples_per_s, r.alone.learner_cpu_s_per_frame,
      mode(r.sync.summary), mode(r.async.summary), r.ratio_async_over_sync,
      r.pipeline_limit, r.stage_limit, r.core_limit, r.pipeline_efficiency,
      r.bottleneck, r.advice, processes(r.processes_sync),
      processes(r.processes_async));
}

Report BenchReport(const BenchResult& r) {
  Report rep{absl::StrCat("rl-vla3 bench: ", r.config_path), {}};
  rep.sections.push_back(
      ReportSection{"Summary", FormatBenchTable(r), {}, {}, {}});
  std::vector<ReportSection> runs = RunReportSections({&r.sync, &r.async});
  rep.sections.insert(rep.sections.end(), runs.begin(), runs.end());
  return rep;
}

}  // namespace rlvla3
