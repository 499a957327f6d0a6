// `rl-vla3 demos export`: the scripted experts' demonstrations as
// LIBERO/robomimic HDF5 files, one per task.
#include <cstdio>
#include <string>
#include <vector>

#include "runtime/logging.h"
#include "services/runs/sft.h"
#include "services/verbs/verb.h"
#include "services/verbs/verbs.h"
#include "spdlog/spdlog.h"

namespace rlvla3 {
namespace {

int VerbDemos(const VerbArgs& f) {
  if (f.operand != "export") {
    std::fprintf(stderr, "rl-vla3: demos takes one action: export (not %s)\n",
                 f.operand.c_str());
    return kExitUsage;
  }
  auto c = LoadOrReport(f);
  if (!c) return kExitUsage;
  InitLogging(c->run.log_level, c->run.log_format);
  absl::StatusOr<SftOptions> options = SftOptionsFromConfig(*c);
  if (!options.ok()) {
    spdlog::error("demos: {}", options.status().ToString());
    return kExitFailure;
  }
  std::string out = f.Get("--out", "");
  if (out.empty()) {
    absl::StatusOr<std::string> dir = MakeRunDir(*c);
    if (!dir.ok()) {
      spdlog::error("demos: {}", dir.status().ToString());
      return kExitFailure;
    }
    out = *dir + "/demos";
  }
  absl::StatusOr<std::vector<std::string>> files =
      ExportDemonstrations(options->demos, options->tasks, out);
  if (!files.ok()) {
    spdlog::error("demos: {}", files.status().ToString());
    return kExitFailure;
  }
  for (const std::string& file : *files) std::printf("%s\n", file.c_str());
  return kExitOk;
}

}  // namespace

Verb DemosVerb() {
  return {"demos",
          "export: the scripted experts' demonstrations (sft.tasks, "
          "sft.demos_per_task\nsuccessful episodes each) as LIBERO/robomimic "
          "HDF5, one file per task\n(<task>_demo.hdf5: data/demo_N/obs/"
          "<camera>_rgb for each camera of env.cameras\n(the wrist as "
          "eye_in_hand), ee_pos, ee_ori, gripper_states; actions, rewards,\n"
          "dones); prints the files\n"
          "  --out DIR   where (default <run.out_dir>/<run.name>/demos)\n",
          {"--out"},
          {},
          VerbDemos,
          /*takes_operand=*/true,
          "rl-vla3: demos needs an action: export\n"};
}

}  // namespace rlvla3
