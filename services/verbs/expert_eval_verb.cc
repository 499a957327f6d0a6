// `rl-vla3 expert-eval`: the scripted experts' success rate per task.
#include <cstdio>
#include <optional>
#include <string>

#include "absl/time/clock.h"
#include "runtime/logging.h"
#include "services/options/config_bridge.h"
#include "services/runs/expert_eval.h"
#include "services/verbs/verb.h"
#include "services/verbs/verbs.h"
#include "spdlog/spdlog.h"

namespace rlvla3 {
namespace {

int VerbExpertEval(const VerbArgs& f) {
  auto c = LoadOrReport(f);
  if (!c) return kExitUsage;
  InitLogging(c->run.log_level, c->run.log_format);
  auto episodes = PositiveInt("--episodes", f.Get("--episodes", "50"));
  if (!episodes) return kExitUsage;
  const auto start = absl::Now();
  absl::StatusOr<std::vector<ExpertTaskResult>> r =
      EvaluateExperts(f.All("--task"), *episodes, EnvOptionsFromConfig(*c),
                      static_cast<int>(c->threads.env_workers));
  if (!r.ok()) {
    spdlog::error("expert-eval: {}", r.status().ToString());
    return absl::IsNotFound(r.status()) ? kExitUsage : kExitFailure;
  }
  std::printf("%s", FormatExpertResults(*r).c_str());
  std::printf("scripted experts, %d seeded initial states per task, %.1f s\n",
              *episodes, absl::ToDoubleSeconds(absl::Now() - start));
  return kExitOk;
}

}  // namespace

Verb ExpertEvalVerb() {
  return {"expert-eval",
          "the scripted experts' success rate per task\n"
          "  --task NAME             a task (repeatable; default all)\n"
          "  --episodes N            episodes per task (default 50)\n",
          {"--task", "--episodes"},
          {},
          VerbExpertEval};
}

}  // namespace rlvla3
