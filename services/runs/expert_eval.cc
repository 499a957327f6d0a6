#include "services/runs/expert_eval.h"

#include <atomic>
#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "envs/scripted_expert.h"
#include "envs/task_file.h"
#include "runtime/supervisor.h"

namespace rlvla3 {
namespace {

absl::StatusOr<ExpertTaskResult> EvaluateTask(const TaskSpec& spec,
                                              int episodes,
                                              const EnvOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  absl::StatusOr<std::shared_ptr<const TaskModel>> task =
      TaskModel::Create(spec, options);
  if (!task.ok()) return task.status();
  absl::StatusOr<std::unique_ptr<ManipulationEnv>> env =
      ManipulationEnv::Create(*task, options, /*seed=*/0, /*env_id=*/0);
  if (!env.ok()) return env.status();
  absl::StatusOr<ScriptedExpert> expert = ScriptedExpert::Create(**task);
  if (!expert.ok()) return expert.status();
  ExpertTaskResult r;
  r.task = spec.name;
  r.family = TaskFamilyName(spec.family);
  int64_t steps_sum = 0;
  float action[kActionDim];
  for (int init = 0; init < episodes; ++init) {
    (*env)->Reset(init % kInitStatesPerTask);
    expert->Reset();
    for (;;) {
      expert->Act(**env, action);
      absl::StatusOr<StepResult> s = (*env)->Step(action);
      if (!s.ok()) return s.status();
      if (s->success) {
        ++r.successes;
        steps_sum += (*env)->step_count();
      }
      if (s->done || s->truncated) break;
    }
    ++r.episodes;
  }
  r.mean_steps_to_success =
      r.successes == 0 ? 0.0 : double(steps_sum) / r.successes;
  r.wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  return r;
}

}  // namespace

absl::StatusOr<std::vector<ExpertTaskResult>> EvaluateExperts(
    const std::vector<std::string>& tasks, int episodes, EnvOptions options,
    int threads) {
  options.render = false;
  std::vector<TaskSpec> owned;
  if (tasks.empty()) {
    owned = BuiltinTaskSuite();
  } else {
    for (const auto& name : tasks) {
      absl::StatusOr<TaskSpec> t = ResolveTask(name);
      if (!t.ok()) return t.status();
      owned.push_back(*std::move(t));
    }
  }
  std::vector<const TaskSpec*> specs;
  for (const auto& t : owned) specs.push_back(&t);
  std::vector<absl::StatusOr<ExpertTaskResult>> results(
      specs.size(), absl::UnknownError("not run"));
  std::atomic<size_t> next{0};
  // Workers take tasks from a shared counter; the supervisor stops them all on
  // the first failure and reports it.
  std::atomic<bool> stop{false};
  Supervisor sup([&] { stop = true; });
  for (int i = 0; i < std::max(1, threads); ++i) {
    sup.Spawn(absl::StrCat("expert-eval-", i), [&]() -> absl::Status {
      for (size_t k; !stop && (k = next.fetch_add(1)) < specs.size();) {
        results[k] = EvaluateTask(*specs[k], episodes, options);
        if (!results[k].ok()) return results[k].status();
      }
      return absl::OkStatus();
    });
  }
  if (absl::Status s = sup.Wait(); !s.ok()) return s;
  std::vector<ExpertTaskResult> out;
  for (auto& r : results) {
    if (!r.ok()) return r.status();
    out.push_back(*std::move(r));
  }
  return out;
}

std::string FormatExpertResults(const std::vector<ExpertTaskResult>& results) {
  std::string s = absl::StrFormat("%-34s %-8s %9s %8s %11s\n", "task", "family",
                                  "success", "episodes", "mean steps");
  double sum = 0;
  for (const auto& r : results) {
    absl::StrAppendFormat(&s, "%-34s %-8s %8.0f%% %8d %11.1f\n", r.task,
                          r.family, 100 * r.success_rate(), r.episodes,
                          r.mean_steps_to_success);
    sum += r.success_rate();
  }
  absl::StrAppendFormat(&s, "%-34s %-8s %8.1f%%\n", "mean", "",
                        results.empty() ? 0.0 : 100 * sum / results.size());
  return s;
}

}  // namespace rlvla3
