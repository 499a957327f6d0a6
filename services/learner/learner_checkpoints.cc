#include "services/learner/learner_checkpoints.h"

#include <spdlog/spdlog.h>

#include "absl/strings/str_cat.h"
#include "runtime/steady_clock.h"
#include "services/learner/gradient_reducer.h"
#include "services/learner/learner_core.h"

namespace rlvla3 {

LearnerCheckpoints::LearnerCheckpoints(const CheckpointOptions& options,
                                       LearnerCore* core,
                                       GradientReducer* reducer,
                                       MetricsRegistry* metrics)
    : options_(options),
      store_(options.dir),
      core_(core),
      reducer_(reducer),
      last_ns_(SteadyNowNs()),
      write_ms_(&metrics->histogram(
          "time_checkpoint_ms",
          +[] { return Histogram::Exponential(0.1, 1.6, 32); })),
      written_(&metrics->counter("checkpoints")),
      failures_(&metrics->counter("checkpoint_failures")) {}

bool LearnerCheckpoints::enabled() const { return !options_.dir.empty(); }

bool LearnerCheckpoints::rank0() const {
  return reducer_ == nullptr || reducer_->rank() == 0;
}

absl::Status LearnerCheckpoints::Prepare(
    bool clear, const std::vector<CheckpointInfo>& reject) {
  last_ns_ = SteadyNowNs();
  last_version_ = core_->version();
  if (!enabled()) return absl::OkStatus();
  if (absl::Status s = store_.CheckWritable(); !s.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "checkpoints cannot be written (", s.message(),
        "); fix the folder (run.out_dir) or set rl.checkpoint_every=0 and "
        "rl.checkpoint_every_s=0"));
  }
  if (!rank0()) return absl::OkStatus();
  if (clear) {
    if (absl::Status s = store_.Clear(); !s.ok()) return s;
  }
  for (const CheckpointInfo& r : reject) {
    if (absl::Status s = store_.Reject(r); !s.ok()) return s;
    spdlog::warn("learner: {} cannot be resumed: set aside as rejected",
                 r.path);
  }
  return store_.RemovePartials();
}

void LearnerCheckpoints::SetAsideResumed(const std::string& path,
                                         uint64_t version,
                                         const absl::Status& why) {
  if (!rank0() || path != store_.CompletePath(version)) return;
  if (absl::Status s = store_.Reject({path, version}); !s.ok()) {
    spdlog::error("learner: cannot set {} aside: {}", path, s.ToString());
    return;
  }
  spdlog::error(
      "learner: the training state of {} does not load ({}): set aside as "
      "rejected; a restart resumes from the one before it",
      path, std::string(why.message()));
}

void LearnerCheckpoints::Published(uint64_t version) {
  if (!enabled() || !rank0()) return;
  if (absl::Status s = store_.RecordPublished(version);
      !s.ok() && !warned_published_) {
    warned_published_ = true;
    spdlog::error("learner: cannot record the published version: {}",
                  s.ToString());
  }
}

absl::Status LearnerCheckpoints::AfterStep() {
  if (!enabled()) return absl::OkStatus();
  const uint64_t v = core_->version();
  bool due = options_.every_versions > 0 &&
             v % static_cast<uint64_t>(options_.every_versions) == 0;
  if (options_.every_s > 0) {
    const bool by_time = (SteadyNowNs() - last_ns_) / 1e9 >= options_.every_s;
    due = due || by_time;
    if (reducer_ != nullptr && reducer_->world_size() > 1) {
      // Clocks differ: the ranks agree (one small collective per step).
      absl::StatusOr<bool> any = reducer_->AnyOf(due);
      if (!any.ok()) return any.status();
      due = *any;
    }
  }
  if (!due || v == last_version_) return absl::OkStatus();
  return Write();
}

absl::Status LearnerCheckpoints::Final() {
  if (!enabled() || core_->version() == last_version_) {
    return absl::OkStatus();
  }
  return Write();
}

absl::Status LearnerCheckpoints::Write() {
  const uint64_t v = core_->version();
  const int64_t t0 = SteadyNowNs();
  const bool group = reducer_ != nullptr && reducer_->world_size() > 1;
  absl::Status s;
  std::string dir = store_.PartialPath(v);
  if (rank0()) {
    absl::StatusOr<std::string> staged = store_.BeginWrite(v);
    s = staged.status();
  }
  if (group) {  // the staging folder exists before any rank writes into it
    absl::StatusOr<bool> failed = reducer_->AnyOf(!s.ok());
    if (!failed.ok()) return failed.status();
    if (*failed && s.ok()) {
      s = absl::AbortedError("rank 0 could not stage the checkpoint");
    }
  }
  if (s.ok() && rank0()) {
    s = core_->policy().Save(dir, options_.tokenizer, v);
    if (s.ok()) s = WriteCheckpointContext(dir, options_.context);
  }
  if (s.ok() || group) {
    // Every rank takes part (the ranks agree inside); a failed collective
    // is the group's error.
    const absl::Status ts = core_->SaveTrainingState(dir);
    if (!core_->group_status().ok()) return core_->group_status();
    if (s.ok()) s = ts;
  }
  if (s.ok() && rank0()) {
    absl::StatusOr<std::string> done = store_.Commit(v);
    s = done.status();
    if (s.ok()) s = store_.Prune(options_.keep);
  }
  last_ns_ = SteadyNowNs();
  last_version_ = v;
  if (!s.ok()) {
    failures_->Add();
    if (rank0()) store_.Abandon(v);
    spdlog::error("learner: checkpoint of version {} failed ({} so far): {}", v,
                  failures_->value(), s.ToString());
    return absl::OkStatus();
  }
  written_->Add();
  const double ms = (SteadyNowNs() - t0) / 1e6;
  write_ms_->Observe(ms);
  if (rank0()) {
    spdlog::info("learner: checkpoint {} ({:.0f} ms)", store_.CompletePath(v),
                 ms);
  }
  return absl::OkStatus();
}

}  // namespace rlvla3
