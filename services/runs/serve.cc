#include "services/runs/serve.h"

#include "runtime/stop_signal.h"
#include "services/runs/serve_role.h"

namespace rlvla3 {

int RunServe(const Config& c, const ServeFlags& flags) {
  absl::StatusOr<RoleSetup> s = RoleSetupFromConfig(c);
  if (!s.ok()) return FailRole(flags.role.c_str(), s.status());
  InstallStopSignalHandlers();
  if (flags.role == "learner") return ServeLearner(c, flags, *s);
  if (flags.role == "inference") return ServeInference(c, flags, *s);
  if (flags.role == "rollout") return ServeRollout(c, flags, *s);
  return FailRole("serve", absl::InvalidArgumentError(
                               "role must be learner, inference or rollout"));
}

}  // namespace rlvla3
