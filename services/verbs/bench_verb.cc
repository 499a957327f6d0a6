// `rl-vla3 bench`: each stage alone, then sync vs async side by side.
#include <cstdio>
#include <optional>
#include <string>

#include "absl/strings/numbers.h"
#include "runtime/logging.h"
#include "runtime/report_html.h"
#include "runtime/stop_signal.h"
#include "runtime/text_file.h"
#include "services/runs/bench.h"
#include "services/verbs/verb.h"
#include "services/verbs/verbs.h"
#include "spdlog/spdlog.h"

namespace rlvla3 {
namespace {

int VerbBench(const VerbArgs& f) {
  auto c = LoadWithRunFlags(f);
  if (!c) return kExitUsage;
  double duration = 60;
  const std::string d = f.Get("--duration", "60");
  if (!absl::SimpleAtod(d, &duration) || duration <= 0) {
    std::fprintf(stderr, "rl-vla3: --duration expects seconds > 0, got '%s'\n",
                 d.c_str());
    return kExitUsage;
  }
  InitLogging(c->run.log_level);
  absl::StatusOr<std::string> dir = MakeRunDir(*c);
  if (!dir.ok()) {
    spdlog::error("bench: {}", dir.status().ToString());
    return kExitFailure;
  }
  InstallStopSignalHandlers();
  const std::string config_name =
      f.config_path.empty() ? "(defaults)" : f.config_path;
  BenchPlacement placement;
  const std::string where = f.Get("--placement", "process");
  if (where == "processes") {
    absl::StatusOr<std::string> self = SelfExecutable();
    if (!self.ok()) {
      spdlog::error("bench: {}", std::string(self.status().message()));
      return kExitFailure;
    }
    placement.processes = true;
    placement.binary = *self;
  } else if (where != "process") {
    std::fprintf(stderr,
                 "rl-vla3: --placement expects process or processes, got "
                 "'%s'\n",
                 where.c_str());
    return kExitUsage;
  }
  absl::StatusOr<BenchResult> r =
      RunBench(*c, config_name, *dir, duration, placement);
  if (!r.ok()) {
    spdlog::error("bench: {}", r.status().ToString());
    return kExitFailure;
  }
  const std::string table = FormatBenchTable(*r);
  const std::string json_path = f.Get("--json", *dir + "/bench.json");
  for (const auto& [path, text] :
       {std::pair<std::string, std::string>{json_path, BenchJson(*r)},
        {*dir + "/bench.txt", table}}) {
    if (absl::Status s = WriteTextFile(path, text); !s.ok()) {
      spdlog::error("bench: {}", s.ToString());
      return kExitFailure;
    }
  }
  const std::string report = *dir + "/report.html";
  if (absl::Status s = WriteReportHtml(BenchReport(*r), report); !s.ok()) {
    spdlog::error("bench: {}", s.ToString());
    return kExitFailure;
  }
  std::printf("%s\njson: %s\nreport: %s\n", table.c_str(), json_path.c_str(),
              report.c_str());
  return kExitOk;
}

}  // namespace

Verb BenchVerb() {
  return {
      "bench",
      "each stage alone, then sync vs async side by side on the same config\n"
      "  --duration SECONDS      per mode (default 60)\n"
      "  --json PATH             figures as JSON (default "
      "<run folder>/bench.json)\n"
      "  --placement processes   also run async as separate processes (up\n"
      "                          --local) in the same table (default: "
      "process;\n"
      "                          sync runs in one process only)\n",
      {"--mode", "--duration", "--json", "--placement"},
      {},
      VerbBench};
}

}  // namespace rlvla3
