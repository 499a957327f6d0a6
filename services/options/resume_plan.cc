#include "services/options/resume_plan.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/config_schema.h"
#include "services/options/checkpoint_fit.h"

namespace rlvla3 {

absl::StatusOr<ResumePlan> PlanResume(
    const Config& c, const std::string& checkpoint_dir,
    const std::vector<SkippedCheckpoint>& unloadable) {
  ResumePlan p;
  const CheckpointStore store(checkpoint_dir);
  absl::StatusOr<uint64_t> published = store.PublishedHighWater();
  if (c.rl.resume == "never") {
    p.clear = true;
    p.published = 0;
    return p;
  }
  if (!published.ok()) return published.status();
  p.published = *published;
  if (c.rl.resume != "auto") {
    std::error_code ec;
    if (!std::filesystem::is_directory(c.rl.resume, ec)) {
      return ConfigError{c.OriginOf("rl.resume"), "rl.resume", c.rl.resume,
                         "auto, never or an existing checkpoint folder"}
          .ToStatus();
    }
    if (std::filesystem::exists(c.rl.resume + "/MANIFEST", ec)) {
      if (absl::Status s = CheckpointStore::Verify(c.rl.resume); !s.ok()) {
        return ConfigError{
            c.OriginOf("rl.resume"), "rl.resume", c.rl.resume,
            absl::StrCat("a whole checkpoint (", s.message(), ")")}
            .ToStatus();
      }
    }
    p.checkpoint = c.rl.resume;
    return p;
  }
  absl::StatusOr<CheckpointInfo> newest =
      store.NewestValid(&p.rejected, unloadable);
  for (const SkippedCheckpoint& r : p.rejected) {
    p.published = std::max(p.published, r.checkpoint.version);
  }
  if (!newest.ok() && !p.rejected.empty()) {
    // A fresh start would throw the run away: only when told.
    return absl::FailedPreconditionError(
        absl::StrCat(checkpoint_dir, " holds ", p.rejected.size(),
                     " checkpoint(s) and none can be resumed (newest: ",
                     p.rejected.front().reason,
                     "); nothing was moved. Restore one, or start afresh with "
                     "rl.resume=never (which removes them)"));
  }
  if (newest.ok()) {
    p.checkpoint = newest->path;
    p.checkpoint_version = newest->version;
  }
  return p;
}

absl::Status RefuseUnusedInitCheckpoint(const Config& c,
                                        const std::string& checkpoint_dir) {
  const std::string key = "rl.init_checkpoint";
  if (c.rl.init_checkpoint.empty() || c.overridden.count(key) == 0 ||
      c.rl.resume != "auto") {
    return absl::OkStatus();
  }
  // The resume's own decision: X goes unused exactly when it would resume.
  const absl::StatusOr<ResumePlan> plan = PlanResume(c, checkpoint_dir);
  if (!plan.ok() || plan->checkpoint.empty()) {
    return absl::OkStatus();  // a fresh start, or PlanAndBuild's error
  }
  return ConfigError{
      c.OriginOf(key), key, c.rl.init_checkpoint,
      absl::StrCat(
          "a start this run uses, but ", checkpoint_dir,
          " already holds checkpoints and rl.resume=auto resumes the newest, ",
          plan->checkpoint,
          ", leaving this one unused. Start from it in another "
          "folder (--set run.name=NEW), or here afresh with --set "
          "rl.resume=never (removes the folder's checkpoints); to resume, "
          "leave out --init-checkpoint")}
      .ToStatus();
}

absl::StatusOr<ResumePlan> PlanAndBuild(
    const Config& c, const std::string& checkpoint_dir,
    const std::function<absl::Status(const Config&)>& build) {
  std::vector<SkippedCheckpoint> unloadable;
  for (;;) {
    absl::StatusOr<ResumePlan> plan = PlanResume(c, checkpoint_dir, unloadable);
    if (!plan.ok()) return plan.status();
    absl::StatusOr<Config> fitted = ConfigForResume(c, *plan);
    if (!fitted.ok()) return fitted.status();
    const absl::Status built = build(*fitted);
    if (built.ok()) return plan;
    if (plan->checkpoint.empty() || c.rl.resume != "auto") return built;
    // Whose fault: the same build without the checkpoint. If that fails
    // too, the config is (and no checkpoint is set aside for it).
    if (absl::Status fresh = build(c); !fresh.ok()) return built;
    spdlog::warn(
        "learner: checkpoint {} verifies but does not load ({}): "
        "set aside, the one before it is tried",
        plan->checkpoint, std::string(built.message()));
    unloadable.push_back(
        {{plan->checkpoint, plan->checkpoint_version},
         absl::StrCat("verifies but does not load: ", built.message())});
  }
}

absl::StatusOr<Config> ConfigForResume(const Config& c, const ResumePlan& p) {
  Config out = c;
  if (p.checkpoint.empty()) return out;
  out.rl.init_checkpoint = p.checkpoint;
  // The resumed checkpoint records what the run trained with: a key given
  // against it (image size, cameras, chunk, executed steps) is refused,
  // naming the key, before a policy of the wrong shape is built.
  if (absl::Status s =
          FitConfigToCheckpoint(p.checkpoint, CheckpointUse::kInit, &out);
      !s.ok()) {
    return s;
  }
  return out;
}

void ApplyResumePlan(const ResumePlan& p, const std::string& checkpoint_dir,
                     EngineParts* parts, LearnerRoleOptions* learner) {
  const uint64_t loaded = parts->version;
  for (const SkippedCheckpoint& r : p.rejected) {
    spdlog::warn("learner: checkpoint skipped: {}", r.reason);
    learner->reject.push_back(r.checkpoint);
  }
  learner->clear_checkpoints = p.clear;
  if (!p.checkpoint.empty() || p.published > 0) {
    // A new version number, above every one published: the inference
    // servers take the resumed weights at once, and every env's admission
    // quota starts afresh (segments in flight when the learner died are
    // lost). Versions loaded+1 .. published are lost: segments tagged with
    // them are dropped.
    parts->version = std::max(p.published, loaded) + 1;
    learner->core.lost_versions_after = loaded;
    learner->core.lost_versions_before = parts->version;
  }
  if (!p.checkpoint.empty()) {
    spdlog::info(
        "learner: resuming from {} (version {}); the run had published up "
        "to version {}, so it goes on at version {}",
        p.checkpoint, loaded, p.published, parts->version);
  } else if (p.clear) {
    spdlog::info(
        "learner: rl.resume=never: a fresh start; checkpoints in {} are "
        "removed",
        checkpoint_dir);
  } else {
    spdlog::info(
        "learner: no complete checkpoint in {}: a fresh start at "
        "version {}",
        checkpoint_dir, parts->version);
  }
}

}  // namespace rlvla3
