#include "services/plan/plan_report.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace rlvla3 {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::string SplitText(const Split& s) {
  if (s.in_process) {
    return absl::StrFormat("one process: %d envs (%d thr), %d inf actor(s)",
                           s.envs_per_worker, s.env_workers,
                           s.inference_servers);
  }
  return absl::StrFormat("%d x %d envs (%d thr), %d inf, %d learner",
                         s.rollout_workers, s.envs_per_worker, s.env_workers,
                         s.inference_servers, s.learner_ranks);
}

std::string Lag(const PipelinePrediction& p) {
  std::string out = absl::StrFormat("mean %.2f (", p.lag_mean);
  for (size_t k = 0; k < p.lag_share.size(); ++k) {
    if (p.lag_share[k] < 0.005) continue;
    absl::StrAppendFormat(&out, "%s%zu: %.0f%%", out.back() == '(' ? "" : ", ",
                          k, 100 * p.lag_share[k]);
  }
  return out + ")";
}

std::string Mode(const char* name, const PipelinePrediction& p) {
  return absl::StrFormat(
      "  %-5s %9.0f env frames/s %9.0f samples/s %9.0f updates/h  busy env "
      "%3.0f%% inference %3.0f%% learner %3.0f%%  bottleneck %s; lag %s\n",
      name, p.frames_per_s, p.samples_per_s, 3600 * p.updates_per_s,
      100 * p.env_busy, 100 * p.inference_busy, 100 * p.learner_busy,
      p.bottleneck, Lag(p));
}

std::string Memory(const char* pod, const MemoryEstimate& m) {
  std::string out =
      absl::StrFormat("  %-18s %7.2f GiB:", pod, m.total_bytes / kGiB);
  for (const MemoryPart& p : m.parts)
    absl::StrAppendFormat(&out, " %s %.0f MiB,", p.name,
                          p.bytes / (1024.0 * 1024.0));
  out.back() = '\n';
  return out;
}

std::string ModeJson(const PipelinePrediction& p) {
  std::string lag;
  for (double x : p.lag_share)
    absl::StrAppendFormat(&lag, "%s%.4f", lag.empty() ? "" : ", ", x);
  return absl::StrFormat(
      "{\"frames_per_s\": %.3f, \"samples_per_s\": %.3f, "
      "\"updates_per_s\": %.4f, \"env_busy\": %.4f, \"inference_busy\": "
      "%.4f, \"learner_busy\": %.4f, \"bottleneck\": \"%s\", \"lag_mean\": "
      "%.4f, \"lag_share\": [%s], \"mean_batch\": %.3f}",
      p.frames_per_s, p.samples_per_s, p.updates_per_s, p.env_busy,
      p.inference_busy, p.learner_busy, p.bottleneck, p.lag_mean, lag,
      p.mean_batch);
}

}  // namespace

std::string ForecastJson(const SplitForecast& f) {
  const Split& s = f.split;
  return absl::StrFormat(
      "{\"split\": {\"rollout_workers\": %d, \"envs_per_worker\": %d, "
      "\"env_workers\": %d, \"inference_servers\": %d, \"learner_ranks\": "
      "%d, \"in_process\": %s}, \"global_batch\": %d, \"async\": %s, "
      "\"sync\": %s}\n",
      s.rollout_workers, s.envs_per_worker, s.env_workers, s.inference_servers,
      s.learner_ranks, s.in_process ? "true" : "false", f.global_batch,
      ModeJson(f.async), ModeJson(f.sync));
}

std::string FormatPlan(const PlanInputs& in,
                       const std::vector<SplitForecast>& all,
                       const SplitForecast& best, const std::string& label) {
  const NodeOffer& o = in.offer;
  std::string out = absl::StrFormat(
      "plan: %d node(s) x %d cores%s, stage costs of %s (%s, %d cores)\n\n"
      "%s: %s, global batch %d%s\n",
      o.nodes, o.cores,
      o.gpus > 0
          ? absl::StrFormat(" x %d GPUs (%.0f GiB)", o.gpus, o.gpu_memory_gib)
          : std::string(),
      in.costs.config, in.costs.gpus, in.costs.cores, label,
      SplitText(best.split), best.global_batch,
      best.split.learner_ranks > 1
          ? absl::StrFormat(", all-reduce %.1f ms per step",
                            1e3 * best.allreduce_s)
          : std::string());
  if (best.split.in_process) {
    absl::StrAppendFormat(&out,
                          "  as: rl-vla3 train --set threads.env_workers=%d "
                          "--set threads.inference_actors=%d\n",
                          best.split.env_workers, best.split.inference_servers);
  }
  out += Mode("async", best.async);
  out += Mode("sync", best.sync);
  absl::StrAppendFormat(&out, "  async / sync %.2fx\n",
                        best.sync.frames_per_s > 0
                            ? best.async.frames_per_s / best.sync.frames_per_s
                            : 0.0);
  out += "memory per pod (device memory on GPUs, host memory on CPUs):\n";
  out += Memory("learner rank", best.learner);
  out += Memory("inference server", best.inference);
  out += Memory("rollout pod (host)", best.rollout_host);
  if (all.size() <= 1) return out;
  std::vector<const SplitForecast*> ranked;
  for (const SplitForecast& f : all) ranked.push_back(&f);
  std::stable_sort(ranked.begin(), ranked.end(), [](auto* a, auto* b) {
    return a->async.samples_per_s > b->async.samples_per_s;
  });
  out += "\nthe best splits tried (async samples/s, bottleneck):\n";
  const size_t shown = std::min<size_t>(ranked.size(), 12);
  for (size_t i = 0; i < shown; ++i) {
    const SplitForecast& f = *ranked[i];
    absl::StrAppendFormat(&out, "  %-44s %8.0f  %-9s %s\n", SplitText(f.split),
                          f.async.samples_per_s, f.async.bottleneck,
                          f.fits ? "" : "does not fit: " + f.why_not);
  }
  if (ranked.size() > shown)
    absl::StrAppendFormat(&out, "  ... %zu more\n", ranked.size() - shown);
  return out;
}

std::string ScaleTableJson(const std::vector<ScaleRow>& rows) {
  std::string out;
  for (const ScaleRow& r : rows) {
    if (!r.found) continue;
    std::string one = ForecastJson(r.best);
    one.insert(1, absl::StrFormat("\"gpus\": %d, ", r.gpus));
    out += one;
  }
  return out;
}

std::string FormatScaleTable(const std::vector<ScaleRow>& rows) {
  std::string out =
      "  GPUs  split                                        async frames/s  "
      "samples/s  sync samples/s  async/sync  per GPU  efficiency  "
      "bottleneck (busy env/inf/learner)\n";
  double first = 0;
  for (const ScaleRow& r : rows) {
    if (!r.found) {
      absl::StrAppendFormat(&out, "  %5d  no split fits\n", r.gpus);
      continue;
    }
    const PipelinePrediction& a = r.best.async;
    const double per_gpu = a.samples_per_s / r.gpus;
    if (first == 0) first = per_gpu;
    absl::StrAppendFormat(
        &out,
        "  %5d  %-44s %13.0f %10.0f %15.0f %10.2fx %8.0f %10.0f%%  %s "
        "(%.0f/%.0f/%.0f%%)\n",
        r.gpus, SplitText(r.best.split), a.frames_per_s, a.samples_per_s,
        r.best.sync.samples_per_s,
        r.best.sync.samples_per_s > 0
            ? a.samples_per_s / r.best.sync.samples_per_s
            : 0.0,
        per_gpu, 100 * per_gpu / first, a.bottleneck, 100 * a.env_busy,
        100 * a.inference_busy, 100 * a.learner_busy);
  }
  return out;
}

}  // namespace rlvla3
