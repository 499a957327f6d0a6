// `rl-vla3 selfcheck`: the queues, batcher, codec and LibTorch with simulated
// envs.
#include <cstdio>
#include <optional>
#include <string>

#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "runtime/logging.h"
#include "runtime/metrics_writer.h"
#include "services/runs/selfcheck.h"
#include "services/verbs/verb.h"
#include "services/verbs/verbs.h"
#include "spdlog/spdlog.h"

namespace rlvla3 {
namespace {

int VerbSelfCheck(const VerbArgs& f) {
  auto c = LoadOrReport(f);
  if (!c) return kExitUsage;
  InitLogging(c->run.log_level, c->run.log_format);
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
  absl::StatusOr<SelfCheckReport> r =
      RunSelfCheck(SelfCheckOptionsFromConfig(*c), &metrics, tick);
  progress.Finish();
  if (!r.ok()) {
    spdlog::error("self-check failed: {}", r.status().ToString());
    return kExitFailure;
  }
  std::printf("%s\n", FormatSelfCheckReport(*r).c_str());
  return r->ok() ? kExitOk : kExitFailure;
}

}  // namespace

Verb SelfCheckVerb() {
  return {
      "selfcheck",
      "runtime self-check: the queues, the dynamic batcher, the tensor codec "
      "and\nLibTorch, with simulated envs (selfcheck.* keys)\n",
      {},
      {},
      VerbSelfCheck};
}

}  // namespace rlvla3
