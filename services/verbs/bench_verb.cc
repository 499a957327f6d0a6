// `rl-vla3 bench`: each stage alone, then sync vs async side by side.
#include <cstdio>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "runtime/logging.h"
#include "runtime/report_html.h"
#include "runtime/stop_signal.h"
#include "runtime/text_file.h"
#include "services/runs/bench.h"
#include "services/runs/stage_costs_bench.h"
#include "services/verbs/verb.h"
#include "services/verbs/verbs.h"
#include "spdlog/spdlog.h"

namespace rlvla3 {
namespace {

// Writes each (path, text); false (logged) on the first that fails.
bool WriteOutputs(
    std::initializer_list<std::pair<std::string, std::string>> files) {
  for (const auto& [path, text] : files) {
    if (absl::Status s = WriteTextFile(path, text); !s.ok()) {
      spdlog::error("bench: {}", s.ToString());
      return false;
    }
  }
  return true;
}

// --env-workers 1,2,4,8 [--envs-per-worker N]; nullopt (said why) if bad.
struct EnvScalingArgs {
  std::vector<int> workers;
  int per_worker = 8;
};
std::optional<EnvScalingArgs> ParseEnvScalingArgs(const VerbArgs& f) {
  EnvScalingArgs a;
  for (absl::string_view w :
       absl::StrSplit(f.Get("--env-workers", ""), ',', absl::SkipEmpty())) {
    int n = 0;
    if (!absl::SimpleAtoi(w, &n) || n < 1 || n > 1024) {
      std::fprintf(stderr,
                   "rl-vla3: --env-workers expects worker counts 1..1024 "
                   "separated by commas, got '%s'\n",
                   std::string(w).c_str());
      return std::nullopt;
    }
    a.workers.push_back(n);
  }
  const std::string e = f.Get("--envs-per-worker", "8");
  if (a.workers.empty() || !absl::SimpleAtoi(e, &a.per_worker) ||
      a.per_worker < 1) {
    std::fprintf(stderr,
                 "rl-vla3: --env-workers expects a list such as 1,2,4,8 and "
                 "--envs-per-worker a count >= 1 (got '%s')\n",
                 e.c_str());
    return std::nullopt;
  }
  return a;
}

// The env stage alone at each worker count.
int EnvScalingBench(const VerbArgs& f, const Config& c, const EnvScalingArgs& a,
                    double seconds, const std::string& dir) {
  absl::StatusOr<EnvScaling> s =
      RunBenchEnvScaling(c, a.workers, a.per_worker, seconds);
  if (!s.ok()) {
    spdlog::error("bench: {}", s.status().ToString());
    return kExitFailure;
  }
  const std::string table = FormatEnvScaling(*s);
  const std::string json_path = f.Get("--json", dir + "/env_scaling.json");
  if (!WriteOutputs({{json_path, EnvScalingJson(*s)},
                     {dir + "/env_scaling.txt", table}})) {
    return kExitFailure;
  }
  std::printf("%s\njson: %s\n", table.c_str(), json_path.c_str());
  return kExitOk;
}

// --stage-costs FILE: the stages alone at the points `plan` needs
// (--duration seconds per point), written as a stage-cost profile.
int StageCostsBench(const VerbArgs& f, const Config& c, double seconds) {
  for (const char* other : {"--env-workers", "--placement", "--json"}) {
    if (!f.All(other).empty()) {
      std::fprintf(stderr,
                   "rl-vla3: --stage-costs measures the stages alone only; "
                   "%s cannot go with it\n",
                   other);
      return kExitUsage;
    }
  }
  if (f.Has("--profile")) {
    std::fprintf(stderr,
                 "rl-vla3: --stage-costs measures the stages alone only; "
                 "--profile cannot go with it\n");
    return kExitUsage;
  }
  const std::string path = f.Get("--stage-costs", "");
  const std::string config_name =
      f.config_path.empty() ? "(defaults)" : f.config_path;
  absl::StatusOr<StageCostProfile> p =
      MeasureStageCosts(c, config_name, seconds);
  if (!p.ok()) {
    spdlog::error("bench: {}", p.status().ToString());
    return kExitFailure;
  }
  if (!WriteOutputs({{path, StageCostsJson(*p)}})) return kExitFailure;
  const LinearFit infer = p->inference.Fit(), learn = p->learner.Fit();
  std::printf(
      "stage costs of %s on %d cores (%s)\n"
      "  env        %.4f ms per frame on a worker (cv %.2f, p99 %.4f ms), "
      "latency model %.1f ms, %.1f MB per env\n"
      "  inference  %.3f ms + %.4f ms per observation (%s, %d threads)\n"
      "  learner    %.2f ms + %.4f ms per sample per optimizer step (%s)\n"
      "  all-reduce %zu sizes (%s over %s)\n"
      "  policy     %.2f M parameters, checkpoint %.1f MB\n"
      "stage costs: %s\n",
      config_name.c_str(), p->cores, p->gpus.c_str(), 1e3 * p->env.step_s_mean,
      p->env.step_s_cv, 1e3 * p->env.step_s_p99, 1e3 * p->env.latency_s_mean,
      p->env.host_bytes_per_env / 1e6, 1e3 * infer.fixed, 1e3 * infer.slope,
      p->inference.device.c_str(), p->inference.threads, 1e3 * learn.fixed,
      1e3 * learn.slope, p->learner.device.c_str(),
      p->allreduce.by_bytes.size(), p->allreduce.backend.c_str(),
      p->allreduce.link.c_str(),
      static_cast<double>(p->policy.parameters) / 1e6,
      static_cast<double>(p->policy.checkpoint_bytes) / 1e6, path.c_str());
  return kExitOk;
}

int VerbBench(const VerbArgs& f) {
  auto c = LoadWithRunFlags(f);
  if (!c) return kExitUsage;
  const bool costs = !f.Get("--stage-costs", "").empty();
  const bool scaling = !f.All("--env-workers").empty();
  std::optional<EnvScalingArgs> scaling_args;
  if (scaling && !(scaling_args = ParseEnvScalingArgs(f))) return kExitUsage;
  const char* fallback = costs ? "2" : scaling ? "5" : "60";
  double duration = 0;
  const std::string d = f.Get("--duration", fallback);
  if (!absl::SimpleAtod(d, &duration) || duration <= 0) {
    std::fprintf(stderr, "rl-vla3: --duration expects seconds > 0, got '%s'\n",
                 d.c_str());
    return kExitUsage;
  }
  InitLogging(c->run.log_level, c->run.log_format);
  absl::StatusOr<std::string> dir = MakeRunDir(*c);
  if (!dir.ok()) {
    spdlog::error("bench: {}", dir.status().ToString());
    return kExitFailure;
  }
  InstallStopSignalHandlers();
  if (costs) return StageCostsBench(f, *c, duration);
  if (scaling) return EnvScalingBench(f, *c, *scaling_args, duration, *dir);
  const std::string config_name =
      f.config_path.empty() ? "(defaults)" : f.config_path;
  BenchPlacement placement;
  const std::string where = f.Get("--placement", "process");
  if (where == "processes") {
    absl::StatusOr<std::string> self = SelfExecutable();
    if (!self.ok()) {
      spdlog::error("bench: {}", std::string(self.status().message()));
      return kExitFailure;
    }
    placement.processes = true;
    placement.binary = *self;
  } else if (where != "process") {
    std::fprintf(stderr,
                 "rl-vla3: --placement expects process or processes, got "
                 "'%s'\n",
                 where.c_str());
    return kExitUsage;
  }
  placement.profile = f.Has("--profile");
  absl::StatusOr<BenchResult> r =
      RunBench(*c, config_name, *dir, duration, placement);
  if (!r.ok()) {
    spdlog::error("bench: {}", r.status().ToString());
    return kExitFailure;
  }
  const std::string table = FormatBenchTable(*r);
  const std::string json_path = f.Get("--json", *dir + "/bench.json");
  if (!WriteOutputs(
          {{json_path, BenchJson(*r)}, {*dir + "/bench.txt", table}})) {
    return kExitFailure;
  }
  const std::string report = *dir + "/report.html";
  if (absl::Status s = WriteReportHtml(BenchReport(*r), report); !s.ok()) {
    spdlog::error("bench: {}", s.ToString());
    return kExitFailure;
  }
  std::printf("%s\njson: %s\nreport: %s\n", table.c_str(), json_path.c_str(),
              report.c_str());
  return kExitOk;
}

}  // namespace

Verb BenchVerb() {
  return {
      "bench",
      "each stage alone, then sync vs async side by side on the same config\n"
      "  --duration SECONDS      per mode (default 60)\n"
      "  --env-workers 1,2,4,8   only the env stage alone, at each of these\n"
      "                          env worker counts (--duration per point,\n"
      "                          default 5): frames/s, CPU per frame, phases\n"
      "  --envs-per-worker N     envs per worker there (default 8)\n"
      "  --json PATH             figures as JSON (default "
      "<run folder>/bench.json)\n"
      "  --placement processes   also run sync and async as separate\n"
      "                          processes (up --local) in the same table\n"
      "                          (default: process)\n"
      "  --profile               also trace a few inference batches and\n"
      "                          optimizer steps (LibTorch's profiler) into\n"
      "                          <run folder>/profile_trace.json (Perfetto)\n"
      "                          and print ops and GPU kernels per batch\n"
      "  --stage-costs FILE      only the stages alone, at the points\n"
      "                          `rl-vla3 plan` needs (inference by batch\n"
      "                          size, learner by batch, all-reduce by\n"
      "                          bytes; --duration per point, default 2),\n"
      "                          written to FILE\n",
      {"--duration", "--json", "--placement", "--env-workers",
       "--envs-per-worker", "--stage-costs"},
      {"--profile"},
      VerbBench};
}

}  // namespace rlvla3
