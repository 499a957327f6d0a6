#include "services/runs/bench.h"
// The bench's figures as a table, JSON and report.html sections.

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace rlvla3 {
namespace {

std::string Pct(double v) { return absl::StrFormat("%.0f%%", v); }

}  // namespace

namespace {

// The header: the machine, the devices, each stage alone.
std::string BenchHeader(const BenchResult& r) {
  return absl::StrFormat(
      "rl-vla3 bench: %s, %.0f s per mode, %d cores, allocator: %s, latency "
      "model: %s\n"
      "devices: %s; env cpu, inference %s (%s), learner %s (%s); policy %.2f M "
      "parameters\n"
      "stages alone: env %.0f frames/s (%.2f ms CPU/frame) | inference %.0f "
      "obs/s at batch %d (= %.0f frames/s) | learner %.0f samples/s (= %.0f "
      "frames/s%s)\n"
      "env per frame: physics %.2f ms, render %.2f ms, readback %.2f ms, "
      "hand-off %.3f ms\n\n",
      r.config_path, r.duration_s, r.cores, r.allocator, r.latency, r.gpus,
      r.inference_device, r.inference_precision, r.learner_device,
      r.learner_precision, r.policy_millions, r.alone.env.frames_per_s,
      1e3 * r.alone.EnvSecondsPerFrame(), r.alone.inference_obs_per_s,
      r.alone.inference_batch, r.alone.inference_obs_per_s * r.execute_steps,
      r.alone.learner_samples_per_s,
      r.alone.learner_samples_per_s * r.execute_steps,
      r.alone.learner_host_syncs_per_step < 0
          ? ""
          : absl::StrFormat(", %.1f host syncs/step",
                            r.alone.learner_host_syncs_per_step),
      r.alone.env.physics_ms, r.alone.env.render_ms, r.alone.env.readback_ms,
      r.alone.env.handoff_ms);
}

// Rows of the sync | async | async/sync table.
class TableWriter {
 public:
  explicit TableWriter(std::string* out) : out_(out) {}
  void Line(const std::string& name, const std::string& sv,
            const std::string& av, const std::string& ratio) {
    absl::StrAppendFormat(out_, "%-28s %12s %12s %10s\n", name, sv, av, ratio);
  }
  static std::string F0(double v) { return absl::StrFormat("%.0f", v); }
  static std::string F2(double v) { return absl::StrFormat("%.2f", v); }
  static std::string Ratio(double x, double y) {
    return y > 0 ? absl::StrFormat("%.2fx", x / y) : std::string("-");
  }

 private:
  std::string* out_;
};

void AppendModes(const EngineSummary& s, const EngineSummary& a,
                 std::string* out) {
  TableWriter t(out);
  using W = TableWriter;
  t.Line("", "sync", "async", "async/sync");
  t.Line("env frames/s", W::F0(s.env_frames_per_s), W::F0(a.env_frames_per_s),
         W::Ratio(a.env_frames_per_s, s.env_frames_per_s));
  t.Line("trained samples/s", W::F0(s.trained_samples_per_s),
         W::F0(a.trained_samples_per_s),
         W::Ratio(a.trained_samples_per_s, s.trained_samples_per_s));
  t.Line("optimizer steps", W::F0(s.optimizer_steps), W::F0(a.optimizer_steps),
         "");
  t.Line("s per optimizer step", W::F2(s.s_per_step), W::F2(a.s_per_step), "");
  t.Line("busy env / worker", Pct(s.busy_env), Pct(a.busy_env), "");
  t.Line("busy inference / actor", Pct(s.busy_inference), Pct(a.busy_inference),
         "");
  t.Line("busy learner", Pct(s.busy_learner), Pct(a.busy_learner), "");
  t.Line("inference batch (mean)", W::F2(s.inference_batch_mean),
         W::F2(a.inference_batch_mean), "");
  t.Line("policy lag mean / max",
         absl::StrFormat("%.2f / %.0f", s.lag_mean, s.lag_max),
         absl::StrFormat("%.2f / %.0f", a.lag_mean, a.lag_max), "");
  t.Line("dropped (stale) samples", W::F0(s.dropped_samples),
         W::F0(a.dropped_samples), "");
  t.Line("episodes / successes",
         absl::StrFormat("%d / %d", s.episodes, s.successes),
         absl::StrFormat("%d / %d", a.episodes, a.successes), "");
  t.Line("rolling success", Pct(100 * s.rolling_success),
         Pct(100 * a.rolling_success), "");
}

void AppendProcesses(const BenchResult& r, std::string* out) {
  const ProcessRun& ps = r.processes_sync;
  const ProcessRun& pa = r.processes_async;
  using W = TableWriter;
  auto v0 = [](const ProcessRun& p, double v) {
    return p.ran ? W::F0(v) : std::string("-");
  };
  absl::StrAppendFormat(
      out,
      "\nacross processes (rl-vla3 up --local: %d processes, gRPC on "
      "loopback)\n",
      std::max(ps.processes, pa.processes));
  TableWriter t(out);
  t.Line("", "sync", "async", "async/sync");
  t.Line("env frames/s", v0(ps, ps.env_frames_per_s),
         v0(pa, pa.env_frames_per_s),
         W::Ratio(pa.env_frames_per_s, ps.env_frames_per_s));
  t.Line("trained samples/s", v0(ps, ps.trained_samples_per_s),
         v0(pa, pa.trained_samples_per_s),
         W::Ratio(pa.trained_samples_per_s, ps.trained_samples_per_s));
  t.Line("optimizer steps", v0(ps, ps.optimizer_steps),
         v0(pa, pa.optimizer_steps), "");
  t.Line("env frames/s vs 1 process",
         W::Ratio(ps.env_frames_per_s, r.sync.summary.env_frames_per_s),
         W::Ratio(pa.env_frames_per_s, r.async.summary.env_frames_per_s), "");
  const StageAlone& a = r.alone;
  if (a.env_processes > 0) {
    absl::StrAppendFormat(
        out,
        "env stage alone across the rollout processes (%d): %.0f frames/s "
        "(%.2fx one process's %.0f)\n",
        a.env_processes, a.env_processes_frames_per_s,
        a.env.frames_per_s > 0
            ? a.env_processes_frames_per_s / a.env.frames_per_s
            : 0,
        a.env.frames_per_s);
  }
  if (r.processes_limit > 0) {
    absl::StrAppendFormat(out,
                          "processes: limit %.0f frames/s (%s), async "
                          "efficiency vs limit: %.2f\n",
                          r.processes_limit, r.processes_bound,
                          r.processes_efficiency);
  }
}

}  // namespace

std::string FormatBenchTable(const BenchResult& r) {
  std::string out = BenchHeader(r);
  AppendModes(r.sync.summary, r.async.summary, &out);
  if (r.sync.busy_gpu >= 0 || r.async.busy_gpu >= 0) {
    absl::StrAppendFormat(
        &out, "GPU busy (NVML) %s sync, %s async; memory %.0f / %.0f MiB\n",
        Pct(r.sync.busy_gpu), Pct(r.async.busy_gpu), r.sync.gpu_memory_mib,
        r.async.gpu_memory_mib);
  }
  absl::StrAppendFormat(
      &out,
      "\npipeline limit: %.0f frames/s (slowest stage alone %.0f, core budget "
      "%d "
      "cores / %.2f ms CPU per frame = %.0f)\n"
      "async efficiency vs limit: %.2f | async/sync env frames/s: %.2fx\n"
      "bottleneck: %s - %s\n",
      r.pipeline_limit, r.stage_limit, r.cores,
      1e3 * (r.alone.EnvSecondsPerFrame() + r.alone.inference_cpu_s_per_frame +
             r.alone.learner_cpu_s_per_frame),
      r.core_limit, r.pipeline_efficiency, r.ratio_async_over_sync,
      r.bottleneck, r.advice);
  if (r.processes_sync.ran || r.processes_async.ran) AppendProcesses(r, &out);
  if (r.profiled) out += FormatProfile(r.profile);
  return out;
}

namespace {

std::string ProfileJson(const BenchResult& r) {
  if (!r.profiled) return "null";
  const ProfileFigures& p = r.profile;
  return absl::StrFormat(
      "{\"trace\": \"%s\", \"batches\": %d, \"steps\": %d, "
      "\"inference_ops_per_batch\": %.1f, \"inference_kernels_per_batch\": "
      "%.1f, \"learner_ops_per_step\": %.1f, \"learner_kernels_per_step\": "
      "%.1f}",
      p.trace_path, p.batches, p.steps, p.inference_ops_per_batch,
      p.inference_kernels_per_batch, p.learner_ops_per_step,
      p.learner_kernels_per_step);
}

}  // namespace

std::string BenchJson(const BenchResult& r) {
  auto processes = [](const ProcessRun& p) -> std::string {
    if (!p.ran) return "null";
    return absl::StrFormat(
        "{\"processes\": %d, \"window_s\": %.2f, \"env_frames_per_s\": %.3f, "
        "\"trained_samples_per_s\": %.3f, \"optimizer_steps\": %d}",
        p.processes, p.window_s, p.env_frames_per_s, p.trained_samples_per_s,
        p.optimizer_steps);
  };
  auto mode = [](const EngineRun& run) {
    const EngineSummary& s = run.summary;
    return absl::StrFormat(
        "{\"env_frames_per_s\": %.3f, \"trained_samples_per_s\": %.3f, "
        "\"optimizer_steps\": %d, \"s_per_step\": %.4f, \"busy_pct\": "
        "{\"env\": %.2f, "
        "\"inference\": %.2f, \"learner\": %.2f, \"gpu\": %.2f}, "
        "\"gpu_memory_mib\": %.0f, \"inference_batch_mean\": "
        "%.3f, "
        "\"policy_lag\": {\"mean\": %.3f, \"max\": %.0f}, \"dropped_samples\": "
        "%d, "
        "\"episodes\": %d, \"successes\": %d, \"rolling_success\": %.4f, "
        "\"wall_s\": %.2f}",
        s.env_frames_per_s, s.trained_samples_per_s, s.optimizer_steps,
        s.s_per_step, s.busy_env, s.busy_inference, s.busy_learner,
        run.busy_gpu, run.gpu_memory_mib, s.inference_batch_mean, s.lag_mean,
        s.lag_max, s.dropped_samples, s.episodes, s.successes,
        s.rolling_success, s.wall_s);
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
      "\"learner_cpu_s_per_frame\": %.6f, "
      "\"learner_host_syncs_per_step\": %.2f},\n"
      "  \"modes\": {\n    \"sync\": %s,\n    \"async\": %s\n  },\n"
      "  \"ratio_async_over_sync\": %.4f,\n  \"pipeline_limit_frames_per_s\": "
      "%.3f,\n"
      "  \"stage_limit_frames_per_s\": %.3f,\n  \"core_limit_frames_per_s\": "
      "%.3f,\n"
      "  \"pipeline_efficiency\": %.4f,\n  \"bottleneck\": \"%s\",\n  "
      "\"advice\": \"%s\",\n  \"processes\": {\"sync\": %s, \"async\": "
      "%s, \"env_alone_processes\": %d, \"env_alone_frames_per_s\": %.3f, "
      "\"limit_frames_per_s\": %.3f, \"limit_bound\": \"%s\", "
      "\"efficiency\": %.4f},\n  \"profile\": %s\n}\n",
      r.config_path, r.latency, r.duration_s, r.cores, r.allocator, r.gpus,
      r.inference_device, r.inference_precision, r.learner_device,
      r.learner_precision, r.policy_millions, r.alone.env.frames_per_s,
      r.alone.EnvSecondsPerFrame(), r.alone.env.physics_ms,
      r.alone.env.render_ms, r.alone.env.readback_ms, r.alone.env.handoff_ms,
      r.alone.env.workers, r.alone.env_probe_workers,
      r.alone.env_probe_frames_per_s, r.alone.inference_obs_per_s,
      r.alone.inference_batch, r.alone.inference_cpu_s_per_frame,
      r.alone.learner_samples_per_s, r.alone.learner_cpu_s_per_frame,
      r.alone.learner_host_syncs_per_step, mode(r.sync), mode(r.async),
      r.ratio_async_over_sync, r.pipeline_limit, r.stage_limit, r.core_limit,
      r.pipeline_efficiency, r.bottleneck, r.advice,
      processes(r.processes_sync), processes(r.processes_async),
      r.alone.env_processes, r.alone.env_processes_frames_per_s,
      r.processes_limit, r.processes_bound, r.processes_efficiency,
      ProfileJson(r));
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
