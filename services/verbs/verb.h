// File: services/verbs/verb.h
// -----------------------------------------------------------------------------
// What a verb of the `rl-vla3` command line is (its name, help, flags and the
// function that runs it) and what every verb shares: the parsed flags, the
// config loaded once with the thread budget applied, the run folder, the exit
// codes. One verb per file in this folder; services/verbs/cli.cc holds the
// table and dispatches on it. A verb parses, calls what it runs
// (services/runs/) and maps the result to an exit code; it never includes
// another verb.
//
// Example (a verb file):
//   int RunHello(const VerbArgs& a) {
//     std::optional<Config> c = LoadOrReport(a);
//     if (!c) return kExitUsage;
//     std::printf("hello %s\n", a.Get("--name", "world").c_str());
//     return kExitOk;
//   }
//   Verb HelloVerb() {
//     return {"hello", "greets\n  --name N\n", {"--name"}, /*switches=*/{},
//             RunHello};
//   }
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_VERBS_VERB_H_
#define RLVLA3_SERVICES_VERBS_VERB_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/config.h"

namespace rlvla3 {

// Exit codes: 0 success, 1 runtime failure, 2 bad usage or bad config (one
// line naming file, key, value and what was expected).
constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

// A verb's command line: the shared flags (--config, --set), its own flags by
// name (each with one value), its switches and its operand (serve's ROLE).
struct VerbArgs {
  std::string verb;
  std::string operand;
  std::string config_path;
  std::vector<std::string> overrides;
  std::vector<std::pair<std::string, std::string>> extra;
  std::vector<std::string> switches;

  // Every value given for `flag`, in order.
  std::vector<std::string> All(const std::string& flag) const;
  // The last value given for `flag`, or `fallback`.
  std::string Get(const std::string& flag, const std::string& fallback) const;
  // Whether the switch `name` (a flag without a value) was given.
  bool Has(const std::string& name) const;
};

using VerbFn = int (*)(const VerbArgs&);

struct Verb {
  const char* name;
  const char* help;  // `rl-vla3 VERB --help`: what it does, its own flags
  std::vector<std::string> flags;     // each takes one value
  std::vector<std::string> switches;  // flags without a value (up --local)
  VerbFn run;
  bool takes_operand = false;      // serve ROLE
  const char* operand_error = "";  // printed when the operand is missing
};

// Parses --config FILE / --config=FILE, --set k=v / --set=k=v, the verb's
// flags (--flag V or --flag=V) and switches from args[first...]. Prints what
// is wrong (with `usage`) and returns nullopt on an unknown argument.
std::optional<VerbArgs> ParseVerbArgs(const Verb& verb,
                                      const std::vector<std::string>& args,
                                      size_t first, const char* usage);

// Loads the config and applies its thread budget, the process's only place
// (LibTorch's pools; llvmpipe's render threads, before any GL context), or
// prints the one-line error; nullopt means exit 2.
std::optional<Config> LoadOrReport(const VerbArgs& a);
// As LoadOrReport, with --mode and --init-checkpoint as run.mode and
// rl.init_checkpoint overrides (train, bench).
std::optional<Config> LoadWithRunFlags(VerbArgs a);

// A positive integer flag value; nullopt (after a message) if invalid.
std::optional<int> PositiveInt(const std::string& flag,
                               const std::string& text);

// The run folder <run.out_dir>/<run.name>, created, with the resolved config.
absl::StatusOr<std::string> MakeRunDir(const Config& c);

// The rl-vla3 executable itself (to start roles as processes).
absl::StatusOr<std::string> SelfExecutable();

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_VERBS_VERB_H_
