// File: services/options/resume_plan.h
// -----------------------------------------------------------------------------
// Where a learner starts: `rl.resume` resolved against the run folder's
// checkpoints, once, before the policy is built.
//
//   auto   the newest checkpoint that verifies (CheckpointStore); newer ones
//          that do not are set aside as rejected-version_V, each named in a
//          warning; with none, a fresh start, said so
//   never  a fresh start; the folder's checkpoints are removed
//   PATH   that checkpoint folder (verified when it has a MANIFEST)
//
// Versions never go backwards: a resumed learner publishes its weights as a
// new version above the highest the run ever published (the store's
// high-water mark), so inference servers take the resumed weights at once,
// every env's admission quota starts afresh, and segments tagged with a
// version in between (the lost versions) are dropped and counted.
//
// Example:
//   absl::StatusOr<ResumePlan> p = PlanResume(config, run_dir +
//   "/checkpoints"); absl::StatusOr<Config> learner_config =
//   ConfigForResume(config, *p);  // init_checkpoint, fitted
//   ... EngineParts parts = BuildEngineParts(learner_config) ...
//   ApplyResumePlan(*p, &parts, &learner_options);
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_OPTIONS_RESUME_PLAN_H_
#define RLVLA3_SERVICES_OPTIONS_RESUME_PLAN_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/checkpoint_store.h"
#include "runtime/config.h"
#include "services/engine/local_engine.h"
#include "services/learner/learner.h"

namespace rlvla3 {

struct ResumePlan {
  std::string checkpoint;  // the folder resumed from; "" for a fresh start
  uint64_t checkpoint_version = 0;
  uint64_t published = 0;  // the highest version the run ever published
  bool clear = false;      // never: the folder's checkpoints go
  std::vector<SkippedCheckpoint> rejected;  // newer ones that failed Verify
};

// Reads the folder (changes nothing). A bad rl.resume PATH is a config
// error. Versions in `unloadable` are passed over like torn ones. Under
// auto, checkpoints that all fail are FailedPrecondition, not a fresh start
// (rl.resume=never says that).
absl::StatusOr<ResumePlan> PlanResume(
    const Config& c, const std::string& checkpoint_dir,
    const std::vector<SkippedCheckpoint>& unloadable = {});

// `train --init-checkpoint X` (rl.init_checkpoint given with --set) into a
// run folder whose checkpoints rl.resume=auto would resume: X would go
// unused, so it is a config error naming the folder's checkpoint and the two
// ways out (another run.name, or rl.resume=never). A rl.init_checkpoint the
// config file gives is the run's own start, and a restart resumes past it.
absl::Status RefuseUnusedInitCheckpoint(const Config& c,
                                        const std::string& checkpoint_dir);

// PlanResume and ConfigForResume, then `build` (the learner's policy and
// options, from the fitted config). Under auto, a checkpoint that verifies
// but does not build (its weights do not load) while the config alone does
// is passed over, named, and set aside with the torn ones; the one before
// it is tried. A config that does not build is the config's error.
absl::StatusOr<ResumePlan> PlanAndBuild(
    const Config& c, const std::string& checkpoint_dir,
    const std::function<absl::Status(const Config&)>& build);

// The config the learner's policy is built from: rl.init_checkpoint is the
// resumed checkpoint, and the config is fitted to what it records
// (checkpoint_fit.h): a given key against it is a config error.
absl::StatusOr<Config> ConfigForResume(const Config& c, const ResumePlan& p);

// After the policy is built: the version it starts at (above every version
// published), what the learner restores and drops, what it tidies. Logs the
// decision.
void ApplyResumePlan(const ResumePlan& p, const std::string& checkpoint_dir,
                     EngineParts* parts, LearnerRoleOptions* learner);

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_OPTIONS_RESUME_PLAN_H_
