#include "services/options/checkpoint_fit.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "envs/task_file.h"
#include "services/options/interface_fit.h"

namespace rlvla3 {
namespace {

// A tasks key's value as a list: its items as written ("all": every
// built-in task's name).
std::vector<std::string> TaskItems(const std::string& list,
                                   const std::string& key) {
  std::vector<std::string> items;
  if (list == "all") {
    absl::StatusOr<std::vector<TaskSpec>> all = ResolveTaskList(list, key);
    if (all.ok()) {
      for (const TaskSpec& t : *all) items.push_back(t.name);
    }
    return items;
  }
  for (absl::string_view item : absl::StrSplit(list, ',', absl::SkipEmpty())) {
    items.emplace_back(absl::StripAsciiWhitespace(item));
  }
  return items;
}

// What a checkpoint of config `c` records, given its executed steps and
// its tasks key.
CheckpointContext ContextOf(const Config& c, int64_t execute_steps,
                            const std::string& tasks, const char* tasks_key) {
  return {c.env.image_width, c.env.image_height, EnvCameras(c.env),
          c.policy.chunk,    execute_steps,      TaskItems(tasks, tasks_key),
          c.env.expert_steps};
}

// The horizon rule (env.horizon_factor) over the recorded expert length. A
// given env.max_episode_steps wins, unless the factor was given with --set
// and the steps only in the file: the command line's later word decides.
void ApplyHorizonRule(const std::string& dir, Config* c) {
  if (c->env.horizon_factor <= 0 || c->env.expert_steps <= 0) return;
  const bool factor_over_file =
      c->overridden.count("env.horizon_factor") > 0 &&
      c->overridden.count("env.max_episode_steps") == 0;
  if (c->given.count("env.max_episode_steps") > 0 && !factor_over_file) {
    spdlog::info("{}: env.max_episode_steps {} as given, not the horizon rule",
                 dir, c->env.max_episode_steps);
    return;
  }
  c->env.max_episode_steps = static_cast<int64_t>(std::ceil(
      c->env.horizon_factor * static_cast<double>(c->env.expert_steps)));
  spdlog::info(
      "{}: horizon {} steps (env.horizon_factor {} x the demos' median expert "
      "length {})",
      dir, c->env.max_episode_steps, c->env.horizon_factor,
      c->env.expert_steps);
}

// A declared policy's interface as the checkpoint keeps it; an undeclared
// one's cameras against those the envs render.
absl::Status FitPolicyInputs(const std::string& dir,
                             const CheckpointContext& ck, Config* c) {
  if (ck.interface) {
    // A declared policy: its declaration, as the checkpoint keeps it.
    if (absl::Status s = FitConfigToInterface(
            *ck.interface,
            absl::StrCat(dir, "/", kCheckpointContextFile, " interface"), c);
        !s.ok()) {
      return s;
    }
  }
  if (ck.interface) return absl::OkStatus();
  if (ck.cameras != UndeclaredPolicyCameras()) {
    return ConfigError{
        dir + "/" + kCheckpointContextFile, "cameras",
        absl::StrJoin(ck.cameras, ","),
        absl::StrCat(absl::StrJoin(UndeclaredPolicyCameras(), ","),
                     ", the cameras an undeclared policy reads")}
        .ToStatus();
  }
  return FitConfigToUndeclared(*c);
}

// The tasks: the checkpoint's replace the use's tasks key when it was not
// given. An evaluation measures what the checkpoint was trained on, so there
// a tasks key given against it (sft.tasks, or env.tasks, which eval would
// otherwise ignore) is a config error; eval's --task names other tasks
// explicitly (it leaves both keys out of c->given). A run starting from the
// checkpoint may train on other tasks (fine-tuning on a new one): a given
// env.tasks stands, logged.
// The same tasks, in any order.
bool SameTasks(std::vector<std::string> a, std::vector<std::string> b) {
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  return a == b;
}

absl::Status FitTasks(const std::string& dir, const CheckpointContext& ck,
                      CheckpointUse use, Config* c,
                      std::vector<std::string>* adopted) {
  if (ck.tasks.empty()) return absl::OkStatus();
  if (use == CheckpointUse::kEvalOtherTasks) {
    spdlog::info(
        "{}: evaluating the tasks given with --task ({}), not the "
        "checkpoint's ({})",
        dir, c->sft.tasks, absl::StrJoin(ck.tasks, ","));
    return absl::OkStatus();
  }
  const std::string recorded = absl::StrJoin(ck.tasks, ",");
  const bool eval = use == CheckpointUse::kEval;
  if (eval) {
    const struct {
      const char* key;
      const std::string* value;
    } keys[] = {{"sft.tasks", &c->sft.tasks}, {"env.tasks", &c->env.tasks}};
    for (const auto& k : keys) {
      if (c->given.count(k.key) == 0 ||
          SameTasks(TaskItems(*k.value, k.key), ck.tasks)) {
        continue;
      }
      return ConfigError{
          c->OriginOf(k.key), k.key, *k.value,
          absl::StrCat(recorded, ", the tasks checkpoint ", dir,
                       " was trained on (its ", kCheckpointContextFile,
                       "); leave the key out to evaluate them, or name "
                       "other tasks with --task")}
          .ToStatus();
    }
  }
  const char* tasks_key = eval ? "sft.tasks" : "env.tasks";
  std::string& tasks = eval ? c->sft.tasks : c->env.tasks;
  if (SameTasks(TaskItems(tasks, tasks_key), ck.tasks)) {
    return absl::OkStatus();
  }
  if (c->given.count(tasks_key) > 0) {
    spdlog::info(
        "{}: training on the tasks given ({}), not the checkpoint's "
        "({})",
        dir, tasks, recorded);
    return absl::OkStatus();
  }
  tasks = recorded;
  adopted->push_back(absl::StrCat(tasks_key, "=", recorded));
  return absl::OkStatus();
}

}  // namespace

absl::Status FitConfigToCheckpoint(const std::string& dir, CheckpointUse use,
                                   Config* c) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return absl::OkStatus();  // loading the checkpoint says what is wrong
  }
  absl::StatusOr<std::optional<CheckpointContext>> read =
      ReadCheckpointContext(dir);
  if (!read.ok()) return read.status();
  if (!read->has_value()) {
    spdlog::info(
        "{}: no {} (an older checkpoint): the config's image size, "
        "chunk and steps are used as they are",
        dir, kCheckpointContextFile);
    return absl::OkStatus();
  }
  const CheckpointContext& ck = **read;
  if (absl::Status s = FitPolicyInputs(dir, ck, c); !s.ok()) return s;
  // The checkpoint's value takes the place of a key the config did not
  // give; a given one must agree.
  const struct {
    const char* key;
    int64_t recorded;
    int64_t* value;
    const char* what;
  } fits[] = {
      {"env.image_width", ck.image_width, &c->env.image_width, "image width"},
      {"env.image_height", ck.image_height, &c->env.image_height,
       "image height"},
      {"policy.chunk", ck.chunk, &c->policy.chunk, "action chunk"},
      {"rl.execute_steps", ck.execute_steps, &c->rl.execute_steps,
       "executed chunk steps per decision"},
      {"env.expert_steps", ck.expert_steps, &c->env.expert_steps,
       "median expert episode length"},
  };
  std::vector<std::string> adopted;
  for (const auto& f : fits) {
    if (*f.value == f.recorded || f.recorded <= 0) continue;
    if (c->given.count(f.key) > 0) {
      return ConfigError{
          c->OriginOf(f.key), f.key, absl::StrCat(*f.value),
          absl::StrCat(f.recorded, ", the ", f.what, " checkpoint ", dir,
                       " was trained with (its ", kCheckpointContextFile,
                       "); leave the key out to take it")}
          .ToStatus();
    }
    *f.value = f.recorded;
    adopted.push_back(absl::StrCat(f.key, "=", f.recorded));
  }
  if (absl::Status s = FitTasks(dir, ck, use, c, &adopted); !s.ok()) return s;
  if (!adopted.empty()) {
    spdlog::info("{}: as the checkpoint records: {}", dir,
                 absl::StrJoin(adopted, " "));
  }
  ApplyHorizonRule(dir, c);
  return absl::OkStatus();
}

CheckpointContext SftCheckpointContext(const Config& c) {
  return ContextOf(c, c.sft.execute_steps, c.sft.tasks, "sft.tasks");
}

CheckpointContext RlCheckpointContext(const Config& c) {
  return ContextOf(c, c.rl.execute_steps, c.env.tasks, "env.tasks");
}

}  // namespace rlvla3
