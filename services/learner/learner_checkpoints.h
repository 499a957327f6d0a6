// File: services/learner/learner_checkpoints.h
// -----------------------------------------------------------------------------
// LearnerCheckpoints: when and how the learner writes its checkpoints, off
// nothing but the learner thread. A checkpoint is due every `every_versions`
// versions or every `every_s` seconds (data-parallel ranks agree on it: one
// AnyOf per step when the schedule is by time); it is staged, the weights by
// rank 0 and each rank its optimizer shard (LearnerCore::SaveTrainingState),
// then committed by rank 0 (CheckpointStore: MANIFEST last, renamed into
// place) and the newest `keep` are kept. A write that fails (a full disk) is
// logged and counted (checkpoint_failures) and training goes on; only a
// failed collective stops the learner.
//
// Rank 0 also records every version it publishes (the high-water mark a
// resumed learner numbers above, resume_plan.h).
//
// Example:
//   LearnerCheckpoints ck(options, &core, reducer, &metrics);
//   ck.Prepare(/*clear=*/false, rejected);   // before the first step
//   ... after each step: if (absl::Status s = ck.AfterStep(); !s.ok()) ...
//   ck.Published(version);
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_LEARNER_LEARNER_CHECKPOINTS_H_
#define RLVLA3_SERVICES_LEARNER_LEARNER_CHECKPOINTS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "policies/checkpoint_context.h"
#include "policies/text_tokenizer.h"
#include "runtime/checkpoint_store.h"
#include "runtime/metrics.h"

namespace rlvla3 {

class LearnerCore;
class GradientReducer;

struct CheckpointOptions {
  std::string dir;             // the run's checkpoints folder; "": none
  int64_t every_versions = 0;  // 0: not by versions
  double every_s = 120;        // 0: not by time
  int keep = 3;                // newest complete ones kept (0: all)
  TextTokenizer tokenizer;     // written with the weights
  // What the policy is trained for, written beside the weights.
  CheckpointContext context;
};

class LearnerCheckpoints {
 public:
  LearnerCheckpoints(const CheckpointOptions& options, LearnerCore* core,
                     GradientReducer* reducer, MetricsRegistry* metrics);

  // Whether this learner writes checkpoints at all (a folder and a schedule).
  bool enabled() const;
  // Before the first step, on every rank: rank 0 removes staging folders,
  // sets `reject` aside, or clears the folder for a fresh start; the folder
  // must be writable (else the error: the run should not start without
  // checkpoints).
  absl::Status Prepare(bool clear, const std::vector<CheckpointInfo>& reject);
  // After each optimizer step: writes a checkpoint when one is due. Errors
  // only when the group failed.
  absl::Status AfterStep();
  // Writes one now (the run's end; one rank only), unless the newest
  // checkpoint is of the current version already.
  absl::Status Final();
  // Rank 0: the checkpoint resumed from (a run folder's own, not a path
  // given) whose training state did not load is set aside as rejected, so
  // the restart that follows takes the one before it.
  void SetAsideResumed(const std::string& path, uint64_t version,
                       const absl::Status& why);
  // Rank 0: the version just published (the high-water mark).
  void Published(uint64_t version);

 private:
  absl::Status Write();
  bool rank0() const;

  CheckpointOptions options_;
  CheckpointStore store_;
  LearnerCore* core_;
  GradientReducer* reducer_;
  int64_t last_ns_;
  uint64_t last_version_ = 0;
  bool warned_published_ = false;
  Histogram* write_ms_;
  Counter* written_;
  Counter* failures_;
};

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_LEARNER_LEARNER_CHECKPOINTS_H_
