#include "services/runs/serve.h"

#include <string>
#include <vector>

#include "runtime/stop_signal.h"
#include "services/options/cluster_options.h"
#include "services/options/engine_config.h"
#include "services/options/resume_plan.h"
#include "services/runs/serve_role.h"

namespace rlvla3 {

namespace {

// The learner resumes (rl.resume): its policy is built from the checkpoint,
// its versions numbered above the run's (resume_plan.h).
absl::StatusOr<RoleSetup> LearnerSetup(const Config& c) {
  const std::string dir = CheckpointDirOf(c);
  absl::StatusOr<RoleSetup> s;
  absl::StatusOr<ResumePlan> plan =
      PlanAndBuild(c, dir, [&s](const Config& fitted) {
        s = RoleSetupFromConfig(fitted);
        return s.status();
      });
  if (!plan.ok()) return plan.status();
  ApplyResumePlan(*plan, dir, &s->parts, &s->options.learner);
  return s;
}

}  // namespace

int RunServe(const Config& c, const ServeFlags& flags) {
  // Every address this role listens on or calls may carry the token as
  // configured: a config error (exit 2) before anything starts.
  std::vector<std::string> addresses = {flags.listen};
  addresses.insert(addresses.end(), flags.learner_ranks.begin(),
                   flags.learner_ranks.end());
  addresses.insert(addresses.end(), flags.inference.begin(),
                   flags.inference.end());
  if (absl::Status st = CheckNetForAddresses(c, addresses); !st.ok()) {
    return FailRole(flags.role.c_str(), st);
  }
  absl::StatusOr<RoleSetup> s =
      flags.role == "learner" ? LearnerSetup(c) : RoleSetupFromConfig(c);
  if (!s.ok()) return FailRole(flags.role.c_str(), s.status());
  // The devices this role runs on exist on this machine.
  if (absl::Status st = CheckRoleDevices(c, flags.role == "inference",
                                         flags.role == "learner");
      !st.ok()) {
    return FailRole(flags.role.c_str(), st);
  }
  InstallStopSignalHandlers();
  if (flags.role == "learner") return ServeLearner(flags, *s);
  if (flags.role == "inference") return ServeInference(flags, *s);
  if (flags.role == "rollout") return ServeRollout(flags, *s);
  return FailRole("serve", absl::InvalidArgumentError(
                               "role must be learner, inference or rollout"));
}

}  // namespace rlvla3
