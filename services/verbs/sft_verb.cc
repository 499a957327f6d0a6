// `rl-vla3 sft`: supervised fine-tuning from demonstrations (the scripted
// experts', or the HDF5 files sft.demos names).
#include <cstdio>
#include <fstream>
#include <optional>
#include <string>

#include "runtime/logging.h"
#include "runtime/metrics_writer.h"
#include "runtime/text_file.h"
#include "services/options/interface_fit.h"
#include "services/runs/sft.h"
#include "services/verbs/verb.h"
#include "services/verbs/verbs.h"
#include "spdlog/spdlog.h"

namespace rlvla3 {
namespace {

int VerbSft(const VerbArgs& f) {
  auto c = LoadOrReport(f);
  if (!c) return kExitUsage;
  InitLogging(c->run.log_level, c->run.log_format);
  if (c->policy.kind != "torchscript") {  // a new TinyVLA: its two cameras
    if (absl::Status s = FitConfigToUndeclared(*c); !s.ok()) {
      spdlog::error("sft: {}", s.ToString());
      return kExitUsage;
    }
  }
  absl::StatusOr<SftOptions> options = SftOptionsFromConfig(*c);
  if (!options.ok()) {
    spdlog::error("sft: {}", options.status().ToString());
    return kExitFailure;
  }
  absl::StatusOr<std::string> dir = MakeRunDir(*c);
  if (!dir.ok()) {
    spdlog::error("sft: {}", dir.status().ToString());
    return kExitFailure;
  }
  ProgressLine progress(stderr, ProgressLine::ParseMode(c->metrics.progress),
                        absl::Seconds(c->metrics.interval_s * 10));
  absl::StatusOr<SftResult> r = RunSft(
      *options, *dir, [&](const std::string& line) { progress.Update(line); });
  progress.Finish();
  if (!r.ok()) {
    // A demo file the run cannot use (sft.demos) is the user's input: exit 2
    // with the message `rl-vla3 config` prints for it.
    if (r.status().code() == absl::StatusCode::kFailedPrecondition) {
      std::fprintf(stderr, "rl-vla3: config error: %s\n",
                   std::string(r.status().message()).c_str());
      return kExitUsage;
    }
    spdlog::error("sft: {}", r.status().ToString());
    return kExitFailure;
  }
  const std::string summary = FormatSftResult(*r);
  std::printf("%s", summary.c_str());
  if (absl::Status s = WriteTextFile(*dir + "/sft_summary.txt", summary);
      !s.ok()) {
    spdlog::error("sft: {}", s.ToString());
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace

Verb SftVerb() {
  return {"sft",
          "supervised fine-tuning (behaviour cloning) of the run's policy "
          "(TinyVLA or a\ndeclared TorchScript module) from demonstrations: "
          "the scripted experts', or the\nHDF5 files sft.demos names (sft.* "
          "keys); writes <run.out_dir>/<run.name>/checkpoint\n",
          {},
          {},
          VerbSft};
}

}  // namespace rlvla3
