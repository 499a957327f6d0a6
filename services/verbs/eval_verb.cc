// `rl-vla3 eval`: a checkpoint's success rate per task.
#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "policies/checkpoint.h"
#include "policies/trainable_policy.h"
#include "runtime/logging.h"
#include "runtime/text_file.h"
#include "services/options/checkpoint_fit.h"
#include "services/runs/sft.h"
#include "services/verbs/verb.h"
#include "services/verbs/verbs.h"
#include "spdlog/spdlog.h"

namespace rlvla3 {
namespace {

// One line per episode (task, initial state, 1/0) to `path`, if one is
// given: the outcomes scripts/paired_mcnemar.py pairs across checkpoints.
absl::Status WriteOutcomes(const std::string& path,
                           const std::vector<TaskSuccess>& r, int first_init) {
  if (path.empty()) return absl::OkStatus();
  std::string text;
  for (const TaskSuccess& t : r) {
    for (size_t e = 0; e < t.outcomes.size(); ++e) {
      absl::StrAppend(&text, t.task, " ", first_init + static_cast<int>(e), " ",
                      t.outcomes[e] ? 1 : 0, "\n");
    }
  }
  return WriteTextFile(path, text);
}

// The run's config as the checkpoint at `path` needs it: what it records
// it was trained for takes the defaults' place (a key given against it is
// refused: nullopt, reported), its own chunk and text length, --task's tasks.
std::optional<Config> ConfigForCheckpoint(const VerbArgs& f, const Config& c,
                                          const std::string& path,
                                          const PolicyCheckpoint& ck) {
  Config cfg = c;
  // --task names the tasks explicitly (a generalisation test): the config's
  // tasks keys are then not checked against the checkpoint's.
  const std::vector<std::string> tasks = f.All("--task");
  if (!tasks.empty()) cfg.sft.tasks = absl::StrJoin(tasks, ",");
  if (absl::Status s = FitConfigToCheckpoint(
          path,
          tasks.empty() ? CheckpointUse::kEval : CheckpointUse::kEvalOtherTasks,
          &cfg);
      !s.ok()) {
    std::fprintf(stderr, "rl-vla3: %s: %s\n",
                 IsConfigError(s) ? "config error" : "eval",
                 std::string(s.message()).c_str());
    return std::nullopt;
  }
  cfg.policy.chunk = ck.policy->chunk();
  cfg.policy.max_text_len = ck.policy->max_text_len();
  return cfg;
}

// The flags that choose the episodes and how actions are drawn.
struct EvalFlags {
  int episodes = 0;
  int first_init = 0;
  bool sampled = false;
  double temperature = 0;  // > 0: replaces the checkpoint's (sampled only)
};

// The named ranges of initial states (docs/training.md, "Validation and
// test"): every choice (screening, demo count, temperature) is made on the
// validation range; the test range is read only for the final table. Both
// are disjoint from the states training draws from by default (0-49) and
// from the wide ranges the learning configs give SFT and RL.
struct InitRange {
  const char* name;
  int first;
  int max_episodes;
};
constexpr InitRange kInitRanges[] = {
    {"validation", 450, 550},  // 450..999
    {"test", 200000, 100000},  // 200,000..299,999
};

// --range NAME: the range (400 episodes unless --episodes); nullptr (and a
// message) for an unknown name or a count past the range's end.
const InitRange* ParseRange(const VerbArgs& f, int episodes) {
  const std::string name = f.Get("--range", "");
  for (const InitRange& r : kInitRanges) {
    if (name != r.name) continue;
    if (f.Get("--first-init", "").empty() && episodes <= r.max_episodes) {
      return &r;
    }
    std::fprintf(stderr,
                 "rl-vla3: eval --range %s holds %d states and takes no "
                 "--first-init; got %d episodes%s\n",
                 r.name, r.max_episodes, episodes,
                 f.Get("--first-init", "").empty() ? "" : " and --first-init");
    return nullptr;
  }
  std::fprintf(stderr,
               "rl-vla3: eval --range must be validation or test, got '%s'\n",
               name.c_str());
  return nullptr;
}

std::optional<EvalFlags> ParseEvalFlags(const VerbArgs& f, const Config& c) {
  EvalFlags e;
  const bool ranged = !f.Get("--range", "").empty();
  auto episodes =
      PositiveInt("--episodes", f.Get("--episodes", ranged ? "400" : "10"));
  if (!episodes) return std::nullopt;
  e.episodes = *episodes;
  // Held out by default: the first state after the ones training draws from.
  e.first_init = static_cast<int>(c.rl.init_state_first + c.rl.init_states);
  if (ranged) {
    const InitRange* r = ParseRange(f, e.episodes);
    if (r == nullptr) return std::nullopt;
    e.first_init = r->first;
  }
  if (const std::string v = f.Get("--first-init", absl::StrCat(e.first_init));
      !absl::SimpleAtoi(v, &e.first_init) || e.first_init < 0) {
    std::fprintf(stderr,
                 "rl-vla3: eval --first-init expects an integer >= 0, got "
                 "'%s'\n",
                 v.c_str());
    return std::nullopt;
  }
  const std::string actions = f.Get("--actions", "greedy");
  if (actions != "greedy" && actions != "sampled") {
    std::fprintf(
        stderr, "rl-vla3: eval --actions must be greedy or sampled, got '%s'\n",
        actions.c_str());
    return std::nullopt;
  }
  e.sampled = actions == "sampled";
  // The checkpoint's own temperature unless given: an RL checkpoint samples
  // at rl.init_action_temperature, an SFT one at what SFT learned, so a
  // sampled comparison of the two names one temperature for both.
  if (const std::string t = f.Get("--temperature", ""); !t.empty()) {
    if (!e.sampled || !absl::SimpleAtod(t, &e.temperature) ||
        !(e.temperature > 0)) {
      std::fprintf(stderr,
                   "rl-vla3: eval --temperature expects a number > 0 with "
                   "--actions sampled, got '%s'\n",
                   t.c_str());
      return std::nullopt;
    }
  }
  return e;
}

int VerbEval(const VerbArgs& f) {
  auto c = LoadOrReport(f);
  if (!c) return kExitUsage;
  InitLogging(c->run.log_level, c->run.log_format);
  const std::string path = f.Get("--checkpoint", "");
  if (path.empty()) {
    std::fprintf(stderr, "rl-vla3: eval needs --checkpoint PATH\n");
    return kExitUsage;
  }
  const std::optional<EvalFlags> e = ParseEvalFlags(f, *c);
  if (!e) return kExitUsage;
  absl::StatusOr<PolicyCheckpoint> ck = LoadPolicyCheckpoint(path);
  if (!ck.ok()) {
    spdlog::error("eval: {}", ck.status().ToString());
    return kExitUsage;
  }
  std::optional<Config> fitted = ConfigForCheckpoint(f, *c, path, *ck);
  if (!fitted) return kExitUsage;
  const Config& cfg = *fitted;
  absl::StatusOr<std::vector<TaskSpec>> tasks = SftTasks(cfg);
  if (!tasks.ok()) {
    spdlog::error("eval: {}", tasks.status().ToString());
    return kExitUsage;
  }
  ck->policy->SetTraining(false);
  if (e->temperature > 0) {
    if (absl::Status s = ck->policy->SetActionTemperature(e->temperature);
        !s.ok()) {
      spdlog::error("eval: --temperature: {}", s.ToString());
      return kExitUsage;
    }
  }
  TrainablePolicy& policy = *ck->policy;
  const auto start = absl::Now();
  absl::StatusOr<std::vector<TaskSuccess>> r = EvaluatePolicy(
      policy, ck->tokenizer, EvalOptionsFromConfig(cfg), *tasks, e->episodes,
      e->sampled, e->first_init, static_cast<int>(cfg.rl.execute_steps));
  if (!r.ok()) {
    spdlog::error("eval: {}", r.status().ToString());
    return kExitFailure;
  }
  std::printf("%s", FormatTaskSuccess(*r).c_str());
  if (absl::Status s =
          WriteOutcomes(f.Get("--outcomes", ""), *r, e->first_init);
      !s.ok()) {
    spdlog::error("eval: {}", s.ToString());
    return kExitFailure;
  }
  std::printf(
      "checkpoint %s (policy version %llu), %s%s actions, %d episodes per "
      "task from initial states %d..%d, %lld steps of each chunk executed, "
      "%.0f s\n",
      path.c_str(), static_cast<unsigned long long>(ck->version),
      e->sampled ? "sampled" : "greedy",
      e->temperature > 0
          ? absl::StrCat(" (temperature ", e->temperature, ")").c_str()
          : "",
      e->episodes, e->first_init, e->first_init + e->episodes - 1,
      static_cast<long long>(
          std::min<int64_t>(cfg.rl.execute_steps, policy.chunk())),
      absl::ToDoubleSeconds(absl::Now() - start));
  return kExitOk;
}

}  // namespace

Verb EvalVerb() {
  return {
      "eval",
      "a checkpoint's success rate per task (TinyVLA or TorchScript)\n"
      "  --checkpoint DIR        checkpoint folder (required)\n"
      "  --episodes N            episodes per task (default 10)\n"
      "  --first-init K          first initial state (default: the first "
      "after training's,\n"
      "                          rl.init_state_first + rl.init_states = 50)\n"
      "  --range validation|test the named held-out states: validation\n"
      "                          450..999 (for every choice), test from\n"
      "                          200,000 (the final table only); 400\n"
      "                          episodes unless --episodes\n"
      "  (acts as RL does: rl.execute_steps of each chunk)\n"
      "  the image size, chunk, executed steps and tasks the checkpoint\n"
      "  records (context.json) replace the defaults; a key given against\n"
      "  them is refused (exit 2)\n"
      "  --task NAME             a task (repeatable; default: the\n"
      "                          checkpoint's tasks; sft.tasks or env.tasks\n"
      "                          given against them is refused)\n"
      "  --actions greedy|sampled  how tokens are chosen (default greedy)\n"
      "  --temperature T         with sampled: sample at T on every action\n"
      "                          dimension (default: the checkpoint's own)\n"
      "  --outcomes FILE         also write each episode's outcome (task, "
      "initial state, 1/0)\n",
      {"--checkpoint", "--episodes", "--task", "--actions", "--first-init",
       "--range", "--outcomes", "--temperature"},
      {},
      VerbEval};
}

}  // namespace rlvla3
