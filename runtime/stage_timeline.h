// File: runtime/stage_timeline.h
// -----------------------------------------------------------------------------
// The stage timeline (rl.timeline): every env step, inference batch, learner
// update and weight publish as a [begin, end) interval of the steady clock,
// recorded by the role that did it, for the report's timeline chart. Disabled
// it costs one branch per call.
//
// Example:
//   StageTimeline timeline(/*enabled=*/true);
//   timeline.Record(StageInterval::kInference, t0_ns, t1_ns);
//   std::vector<StageInterval> all = timeline.Intervals();
// -----------------------------------------------------------------------------
#ifndef RLVLA3_RUNTIME_STAGE_TIMELINE_H_
#define RLVLA3_RUNTIME_STAGE_TIMELINE_H_

#include <cstdint>
#include <mutex>
#include <vector>

#include "absl/base/thread_annotations.h"

namespace rlvla3 {

// One interval on the stage timeline (steady-clock ns).
struct StageInterval {
  enum Stage { kEnvStep, kInference, kLearnerUpdate, kWeightPublish };
  Stage stage;
  int64_t begin_ns, end_ns;
};

class StageTimeline {
 public:
  explicit StageTimeline(bool enabled) : enabled_(enabled) {}
  void Record(StageInterval::Stage stage, int64_t begin_ns, int64_t end_ns) {
    if (!enabled_) return;
    std::lock_guard<std::mutex> lock(mu_);
    intervals_.push_back({stage, begin_ns, end_ns});
  }
  std::vector<StageInterval> Intervals() const {
    std::lock_guard<std::mutex> lock(mu_);
    return intervals_;
  }

 private:
  const bool enabled_;
  mutable std::mutex mu_;
  std::vector<StageInterval> intervals_ ABSL_GUARDED_BY(mu_);
};

}  // namespace rlvla3

#endif  // RLVLA3_RUNTIME_STAGE_TIMELINE_H_
