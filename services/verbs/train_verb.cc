// `rl-vla3 train`: RL post-training in one process; the run folder and its
// report.
#include <cstdio>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "runtime/config_schema.h"
#include "runtime/file_lock.h"
#include "runtime/logging.h"
#include "runtime/report_html.h"
#include "runtime/stop_signal.h"
#include "runtime/text_file.h"
#include "services/options/engine_config.h"
#include "services/runs/engine_run.h"
#include "services/runs/learning_curve.h"
#include "services/verbs/verb.h"
#include "services/verbs/verbs.h"
#include "spdlog/spdlog.h"

namespace rlvla3 {
namespace {

int VerbTrain(const VerbArgs& f) {
  auto c = LoadWithRunFlags(f);
  if (!c) return kExitUsage;
  InitLogging(c->run.log_level, c->run.log_format);
  if (absl::Status s = CheckRoleDevices(*c, true, true); !s.ok()) {
    spdlog::error("train: {}", std::string(s.message()));
    return kExitUsage;
  }
  // One writer per run folder, before anything in it is written.
  absl::StatusOr<FileLock> lock = FileLock::Acquire(
      absl::StrCat(c->run.out_dir, "/", c->run.name, "/learner.lock"));
  if (!lock.ok()) {
    spdlog::error("train: {}", std::string(lock.status().message()));
    return lock.status().code() == absl::StatusCode::kFailedPrecondition
               ? kExitUsage
               : kExitFailure;
  }
  absl::StatusOr<std::string> dir = MakeRunDir(*c);
  if (!dir.ok()) {
    spdlog::error("train: {}", dir.status().ToString());
    return kExitFailure;
  }
  InstallStopSignalHandlers();
  absl::StatusOr<EngineSetup> setup =
      EngineSetupFromConfig(*c, *dir, RunOptions{}.write_outputs);
  absl::StatusOr<EngineRun> r = setup.ok()
                                    ? RunEngineOnce(*setup, *dir, RunOptions{})
                                    : absl::StatusOr<EngineRun>(setup.status());
  if (!r.ok()) {
    if (IsConfigError(r.status())) {  // as a config's load reports one
      std::fprintf(stderr, "rl-vla3: config error: %s\n",
                   std::string(r.status().message()).c_str());
      return kExitUsage;
    }
    spdlog::error("train: {}", r.status().ToString());
    // A config error, or a state only the user can resolve (checkpoints
    // that all fail, an unwritable folder): a restart would not help.
    return IsConfigError(r.status()) ||
                   r.status().code() == absl::StatusCode::kFailedPrecondition
               ? kExitUsage
               : kExitFailure;
  }
  Report report{absl::StrCat("rl-vla3 train: ", c->run.name, " (", c->run.mode,
                             ", ", c->rl.algorithm, ")"),
                RunReportSections({&*r})};
  const std::string summary = FormatTrainSummary(*r);
  report.sections.insert(report.sections.begin(),
                         ReportSection{"Summary", summary, {}, {}, {}});
  const std::string report_path = *dir + "/report.html";
  if (absl::Status s = WriteReportHtml(report, report_path); !s.ok()) {
    spdlog::error("train: {}", s.ToString());
    return kExitFailure;
  }
  std::printf("%sreport: %s\n", summary.c_str(), report_path.c_str());
  for (const auto& [file, text] :
       {std::pair<std::string, std::string>{"summary.txt", summary},
        {"learning_curve.json",
         LearningCurveJson(c->run.mode, r->episodes, r->curve,
                           kLearningCurveJsonBuckets)}}) {
    if (absl::Status s = WriteTextFile(*dir + "/" + file, text); !s.ok()) {
      spdlog::error("train: {}", s.ToString());
      return kExitFailure;
    }
  }
  return kExitOk;
}

}  // namespace

Verb TrainVerb() {
  return {
      "train",
      "RL post-training: rollout worker, inference server and learner "
      "(rl.* keys);\nwrites metrics, checkpoints and report.html to the run "
      "folder\n"
      "  --mode sync|async       run.mode (default async)\n"
      "  --init-checkpoint DIR   start from this checkpoint "
      "(rl.init_checkpoint)\n"
      "  a TorchScript policy: --set policy.kind=torchscript --set "
      "policy.path=M.pt\n",
      {"--mode", "--init-checkpoint"},
      {},
      VerbTrain};
}

}  // namespace rlvla3
