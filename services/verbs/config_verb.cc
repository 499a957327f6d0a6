// `rl-vla3 config`: the resolved config (defaults <- file <- --set) as YAML,
// after the checks a run makes at start that need no env and no learner.
#include <cstdio>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "envs/task_file.h"
#include "policies/torchscript_policy.h"
#include "runtime/config.h"
#include "runtime/config_reference.h"
#include "services/options/sft_options.h"
#include "services/runs/sft.h"
#include "services/verbs/verb.h"
#include "services/verbs/verbs.h"

namespace rlvla3 {
namespace {

// What a run would refuse at start, checked without running: the tasks
// resolve (names, or task files whose scenes compile), a declared
// TorchScript policy loads and answers its probe (the module, its
// declaration against the config, its tokenizer file), and sft.demos' files
// fit the run (cameras, sizes, proprio, actions, tasks).
absl::Status CheckRunInputs(const Config& c) {
  if (absl::StatusOr<std::vector<TaskSpec>> t =
          ResolveTaskList(c.env.tasks, "env.tasks");
      !t.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("env.tasks: ", t.status().message()));
  }
  if (absl::StatusOr<std::vector<TaskSpec>> t = SftTasks(c); !t.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("sft.tasks: ", t.status().message()));
  }
  if (c.policy.kind == "torchscript" && c.rl.init_checkpoint.empty()) {
    absl::StatusOr<std::unique_ptr<TorchScriptPolicy>> p =
        TorchScriptPolicy::Load(c.policy.path, /*bins=*/256,
                                c.policy.max_text_len);
    if (!p.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("policy.path: ", p.status().message()));
    }
  }
  if (!c.sft.demos.empty()) {
    absl::StatusOr<SftOptions> o = SftOptionsFromConfig(c);
    if (!o.ok()) return o.status();
    absl::StatusOr<DemoSet> d =
        ReadDemonstrations(o->demo_files, o->demos.chunk, o->tasks,
                           o->demos.env.image_width, o->demos.env.image_height,
                           o->demos.env.cameras, o->demo_read, o->demo_task);
    if (!d.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("sft.demos: ", d.status().message()));
    }
  }
  return absl::OkStatus();
}

int VerbConfig(const VerbArgs& f) {
  if (f.Has("--reference")) {
    std::fputs(ConfigReferenceMarkdown().c_str(), stdout);
    return kExitOk;
  }
  auto c = LoadOrReport(f);
  if (!c) return kExitUsage;
  if (absl::Status s =
          f.Has("--keys-only") ? absl::OkStatus() : CheckRunInputs(*c);
      !s.ok()) {
    std::fprintf(stderr, "rl-vla3: config error: %s\n",
                 std::string(s.message()).c_str());
    return kExitUsage;
  }
  std::fputs(ConfigToYaml(*c).c_str(), stdout);
  return kExitOk;
}

}  // namespace

Verb ConfigVerb() {
  return {"config",
          "print the resolved config (defaults <- file <- --set) as YAML,\n"
          "  after what a run checks at start: a declared policy loads,\n"
          "  sft.demos' files fit the run (exit 2 naming what does not)\n"
          "  --keys-only       check keys and values only, not the demo files\n"
          "                    or the policy a run would load\n"
          "  --reference       print every key's type, default, accepted "
          "values and\n"
          "                    meaning as Markdown (docs/config.md)\n",
          {},
          {"--reference", "--keys-only"},
          VerbConfig};
}

}  // namespace rlvla3
