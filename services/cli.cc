#include "services/cli.h"

#include <spdlog/spdlog.h>

#include <cstdio>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "runtime/config.h"
#include "runtime/logging.h"
#include "runtime/metrics_writer.h"
#include "services/selfcheck.h"

namespace rlvla3 {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

constexpr char kUsage[] =
    "usage: rl-vla3 <verb> [--config FILE] [--set key=value ...]\n"
    "verbs:\n"
    "  config     print the resolved config (defaults, file, overrides) or its "
    "error\n"
    "  selfcheck  run the runtime self-check (queues, batcher, codec, LibTorch "
    "policy)\n"
    "  version    print the version\n"
    "  help       this text\n";

// The flags every verb shares.
struct CommonFlags {
  std::string config_path;
  std::vector<std::string> overrides;
};

// Parses --config FILE / --config=FILE and --set k=v / --set=k=v.
std::optional<CommonFlags> ParseFlags(const std::vector<std::string>& args,
                                      size_t first) {
  CommonFlags f;
  for (size_t i = first; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](const std::string& flag) -> std::optional<std::string> {
      if (a == flag) {
        if (i + 1 >= args.size()) return std::nullopt;
        return args[++i];
      }
      return a.substr(flag.size() + 1);
    };
    if (a == "--config" || absl::StartsWith(a, "--config=")) {
      auto v = value("--config");
      if (!v) {
        std::fprintf(stderr, "rl-vla3: --config needs a file\n");
        return std::nullopt;
      }
      f.config_path = *v;
    } else if (a == "--set" || absl::StartsWith(a, "--set=")) {
      auto v = value("--set");
      if (!v) {
        std::fprintf(stderr, "rl-vla3: --set needs key=value\n");
        return std::nullopt;
      }
      f.overrides.push_back(*v);
    } else {
      std::fprintf(stderr, "rl-vla3: unknown argument '%s'\n%s", a.c_str(),
                   kUsage);
      return std::nullopt;
    }
  }
  return f;
}

// Loads the config or prints its one-line error; nullopt means exit 2.
std::optional<Config> LoadOrReport(const CommonFlags& f) {
  absl::StatusOr<Config> c = LoadConfig(f.config_path, f.overrides);
  if (!c.ok()) {
    std::fprintf(stderr, "rl-vla3: config error: %s\n",
                 std::string(c.status().message()).c_str());
    return std::nullopt;
  }
  return *std::move(c);
}

int VerbConfig(const CommonFlags& f) {
  auto c = LoadOrReport(f);
  if (!c) return kExitUsage;
  std::fputs(ConfigToYaml(*c).c_str(), stdout);
  return kExitOk;
}

int VerbSelfCheck(const CommonFlags& f) {
  auto c = LoadOrReport(f);
  if (!c) return kExitUsage;
  InitLogging(c->run.log_level);
  spdlog::info(
      "self-check: {} envs x {} steps, {} inference actor(s), B_max {}, T_max "
      "{} ms",
      c->selfcheck.num_envs, c->selfcheck.steps_per_env,
      c->threads.inference_actors, c->batcher.max_batch,
      c->batcher.max_wait_ms);
  MetricsRegistry metrics;
  ProgressLine progress(stderr, ProgressLine::ParseMode(c->metrics.progress),
                        absl::Seconds(c->metrics.interval_s * 5));
  const double total =
      static_cast<double>(c->selfcheck.num_envs * c->selfcheck.steps_per_env);
  auto tick = [&](const MetricsSnapshot& s) {
    progress.Update(absl::StrFormat(
        "[selfcheck %5.1fs] frames %6.0f/%.0f | env frames/s %7.0f | wait for "
        "action p50 %.2f ms | "
        "busy env %3.0f%% inference %3.0f%% | request queue %3.0f",
        s.elapsed_s, s.Get("env_frames"), total, s.Get("env_frames_per_s"),
        s.Get("wait_for_action_ms.p50"), s.Get("env_step.busy_pct"),
        s.Get("inference.busy_pct"), s.Get("request_queue_depth")));
  };
  absl::StatusOr<SelfCheckReport> r = RunSelfCheck(*c, &metrics, tick);
  progress.Finish();
  if (!r.ok()) {
    spdlog::error("self-check failed: {}", r.status().ToString());
    return kExitFailure;
  }
  std::printf("%s\n", FormatSelfCheckReport(*r).c_str());
  return r->ok() ? kExitOk : kExitFailure;
}

}  // namespace

int RunCli(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "help" || args[0] == "--help" ||
      args[0] == "-h") {
    std::fputs(kUsage, args.empty() ? stderr : stdout);
    return args.empty() ? kExitUsage : kExitOk;
  }
  const std::string& verb = args[0];
  if (verb == "version" || verb == "--version") {
    std::printf("rl-vla3 %s\n", RLVLA3_VERSION);
    return kExitOk;
  }
  auto flags = ParseFlags(args, 1);
  if (!flags) return kExitUsage;
  if (verb == "config") return VerbConfig(*flags);
  if (verb == "selfcheck") return VerbSelfCheck(*flags);
  std::fprintf(stderr, "rl-vla3: unknown verb '%s'\n%s", verb.c_str(), kUsage);
  return kExitUsage;
}

}  // namespace rlvla3
