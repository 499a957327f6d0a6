#include "services/verbs/verb.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <system_error>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "envs/egl_context.h"
#include "runtime/text_file.h"
#include "runtime/thread_budget.h"
#include "services/options/checkpoint_fit.h"
#include "services/options/interface_fit.h"

namespace rlvla3 {

std::vector<std::string> VerbArgs::All(const std::string& flag) const {
  std::vector<std::string> v;
  for (const auto& [k, val] : extra) {
    if (k == flag) v.push_back(val);
  }
  return v;
}

std::string VerbArgs::Get(const std::string& flag,
                          const std::string& fallback) const {
  auto v = All(flag);
  return v.empty() ? fallback : v.back();
}

bool VerbArgs::Has(const std::string& name) const {
  for (const std::string& s : switches) {
    if (s == name) return true;
  }
  return false;
}

std::optional<VerbArgs> ParseVerbArgs(const Verb& verb,
                                      const std::vector<std::string>& args,
                                      size_t first, const char* usage) {
  VerbArgs f;
  f.verb = verb.name;
  std::vector<std::string> flags = {"--config", "--set"};
  flags.insert(flags.end(), verb.flags.begin(), verb.flags.end());
  for (size_t i = first; i < args.size(); ++i) {
    const std::string& a = args[i];
    bool is_switch = false;
    for (const auto& s : verb.switches) is_switch = is_switch || a == s;
    if (is_switch) {
      f.switches.push_back(a);
      continue;
    }
    const std::string* matched = nullptr;
    for (const auto& flag : flags) {
      if (a == flag || absl::StartsWith(a, flag + "=")) matched = &flag;
    }
    if (matched == nullptr) {
      std::fprintf(stderr, "rl-vla3: unknown argument '%s'\n%s", a.c_str(),
                   usage);
      return std::nullopt;
    }
    std::string value;
    if (a == *matched) {
      if (i + 1 >= args.size()) {
        std::fprintf(stderr, "rl-vla3: %s needs a value\n", matched->c_str());
        return std::nullopt;
      }
      value = args[++i];
    } else {
      value = a.substr(matched->size() + 1);
    }
    if (*matched == "--config") {
      f.config_path = value;
    } else if (*matched == "--set") {
      f.overrides.push_back(value);
    } else {
      f.extra.emplace_back(*matched, value);
    }
  }
  return f;
}

std::optional<Config> LoadOrReport(const VerbArgs& f) {
  absl::StatusOr<Config> c = LoadConfig(f.config_path, f.overrides);
  if (c.ok() && !c->rl.init_checkpoint.empty()) {
    // A run starting from a checkpoint takes what it records (image size,
    // chunk, executed steps, tasks) in place of the defaults.
    if (absl::Status s = FitConfigToCheckpoint(c->rl.init_checkpoint,
                                               CheckpointUse::kInit, &*c);
        !s.ok()) {
      c = s;
    }
  } else if (c.ok()) {
    // A declared TorchScript policy's image size, chunk and text length.
    if (absl::Status s = FitConfigToPolicy(&*c); !s.ok()) c = s;
  }
  if (!c.ok()) {
    std::fprintf(stderr, "rl-vla3: config error: %s\n",
                 std::string(c.status().message()).c_str());
    return std::nullopt;
  }
  // The only place thread counts are applied: LibTorch's pools, and
  // llvmpipe's render threads (Mesa reads LP_NUM_THREADS only from the
  // environment, when the first GL context is made: set here, before any).
  if (absl::Status s = ApplyThreadBudget(c->threads); !s.ok()) {
    std::fprintf(stderr, "rl-vla3: %s\n", std::string(s.message()).c_str());
    return std::nullopt;
  }
  ConfigureSoftwareRasterizer(static_cast<int>(c->threads.lp_num_threads));
  return *std::move(c);
}

std::optional<Config> LoadWithRunFlags(VerbArgs f) {
  const std::string mode = f.Get("--mode", "");
  if (!mode.empty()) f.overrides.push_back("run.mode=" + mode);
  const std::string init = f.Get("--init-checkpoint", "");
  if (!init.empty()) f.overrides.push_back("rl.init_checkpoint=" + init);
  return LoadOrReport(f);
}

std::optional<int> PositiveInt(const std::string& flag,
                               const std::string& text) {
  int v = 0;
  if (!absl::SimpleAtoi(text, &v) || v < 1) {
    std::fprintf(stderr, "rl-vla3: %s = \"%s\": expected a positive integer\n",
                 flag.c_str(), text.c_str());
    return std::nullopt;
  }
  return v;
}

absl::StatusOr<std::string> MakeRunDir(const Config& c) {
  const std::string dir = c.run.out_dir + "/" + c.run.name;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return absl::UnavailableError(absl::StrCat(dir, ": ", ec.message()));
  if (absl::Status s = WriteTextFile(dir + "/config.yaml", ConfigToYaml(c));
      !s.ok())
    return s;
  return dir;
}

absl::StatusOr<std::string> SelfExecutable() {
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) {
    return absl::NotFoundError(
        "cannot find the rl-vla3 executable (/proc/self/exe)");
  }
  return std::string(self, static_cast<size_t>(n));
}

}  // namespace rlvla3
