// File: services/rollout/starved_notices.h
// -----------------------------------------------------------------------------
// StarvedNotices: which of the learner's starvation counts a rollout worker
// has not acted on yet. The learner counts the times it was starved
// (Learner::starved) and says so with every heartbeat reply, with a number
// naming its process: a restarted learner counts from zero again, and its
// first count is new however low it is. A worker may hear a count twice or
// miss one (a lost reply); what matters is that a new one is heard once.
//
// Example:
//   StarvedNotices heard;
//   if (heard.New(reply_incarnation, reply_starved)) gate.TopUp(1);
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_ROLLOUT_STARVED_NOTICES_H_
#define RLVLA3_SERVICES_ROLLOUT_STARVED_NOTICES_H_

#include <cstdint>
#include <mutex>

#include "absl/base/thread_annotations.h"

namespace rlvla3 {

class StarvedNotices {
 public:
  // True when `starved` of learner `incarnation` says something new: a
  // higher count than heard from it, or a first count above 0 from a new one.
  bool New(uint64_t incarnation, uint64_t starved) {
    std::lock_guard<std::mutex> lock(mu_);
    const bool fresh =
        incarnation != incarnation_ ? starved > 0 : starved > starved_;
    if (incarnation != incarnation_ || starved > starved_) {
      incarnation_ = incarnation;
      starved_ = starved;
    }
    return fresh;
  }

 private:
  std::mutex mu_;
  uint64_t incarnation_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t starved_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_ROLLOUT_STARVED_NOTICES_H_
