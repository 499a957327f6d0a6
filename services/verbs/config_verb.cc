// `rl-vla3 config`: the resolved config (defaults <- file <- --set) as YAML.
#include <cstdio>
#include <optional>
#include <string>

#include "runtime/config.h"
#include "runtime/config_reference.h"
#include "services/verbs/verb.h"
#include "services/verbs/verbs.h"

namespace rlvla3 {
namespace {

int VerbConfig(const VerbArgs& f) {
  if (f.Has("--reference")) {
    std::fputs(ConfigReferenceMarkdown().c_str(), stdout);
    return kExitOk;
  }
  auto c = LoadOrReport(f);
  if (!c) return kExitUsage;
  std::fputs(ConfigToYaml(*c).c_str(), stdout);
  return kExitOk;
}

}  // namespace

Verb ConfigVerb() {
  return {"config",
          "print the resolved config (defaults <- file <- --set) as YAML\n"
          "  --reference       print every key's type, default, accepted "
          "values and\n"
          "                    meaning as Markdown (docs/config.md)\n",
          {},
          {"--reference"},
          VerbConfig};
}

}  // namespace rlvla3
