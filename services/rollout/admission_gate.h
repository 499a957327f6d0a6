// File: services/rollout/admission_gate.h
// -----------------------------------------------------------------------------
// Staleness bound by admission control (as AReaL's and Sample Factory's):
// each env may take unit n (a decision for PPO, an episode for GRPO) only if
//   n < (learner_version + 1 + max_policy_lag) * quota
// where quota is the env's share of one global batch. An env over its budget
// is parked, not blocked: TryAdmit returns false and remembers it, and
// Advance (called by the learner after each publish) returns the envs whose
// budget opened, for the caller to resume. max_policy_lag 0 is lock-step.
// A listener hears every park and resume under the gate's lock, so the order
// it hears them in is the order they happened in (a sync barrier in another
// process needs that order; see ObservationChannel::NoteParked).
//
// The budget assumes every admitted unit reaches the learner. Units lost on
// the way (a broken segment stream, samples of versions a restarted learner
// dropped, a GRPO group that lost a member) leave the learner short of its
// batch while every env is parked: neither moves again. TopUp (called when
// the learner says it is starved, see Learner::starved) adds one
// quota to every env's budget for good.
//
// Example:
//   AdmissionGate gate(num_envs, /*quota=*/16, /*max_policy_lag=*/1);
//   if (gate.TryAdmit(env, decisions_taken)) Submit(env);  // else parked
//   for (int env : gate.Advance(new_version)) Submit(env);  // learner side
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_ROLLOUT_ADMISSION_GATE_H_
#define RLVLA3_SERVICES_ROLLOUT_ADMISSION_GATE_H_

#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/types/span.h"
#include "services/rollout/starved_notices.h"

namespace rlvla3 {

class AdmissionGate {
 public:
  // Hears parks (parked = true) and resumes, under the gate's lock: it must
  // not call back into the gate.
  using Listener = std::function<void(absl::Span<const int> envs, bool parked)>;

  AdmissionGate(int num_envs, int64_t quota, int64_t max_policy_lag,
                Listener listener = nullptr);

  // True if env may take its unit number `unit` (0-based) now; otherwise the
  // env is parked until an Advance lets it through.
  bool TryAdmit(int env, int64_t unit);
  // The learner reached `version`; returns the parked envs now admitted (their
  // units are admitted too: the caller resumes them without asking again).
  // With `parked_ns`, adds the time those envs spent parked, summed.
  std::vector<int> Advance(uint64_t version, int64_t* parked_ns = nullptr);
  // One more quota per env, `quotas` times (the learner was starved: units
  // were lost on the way); returns the parked envs now admitted, as Advance.
  std::vector<int> TopUp(int64_t quotas, int64_t* parked_ns = nullptr);
  // One TopUp(1) when `starved` of learner `incarnation` is news
  // (StarvedNotices) and an env is parked (with none parked the envs are
  // moving and need none); else none.
  std::vector<int> TopUpIfStarved(uint64_t incarnation, uint64_t starved,
                                  int64_t* parked_ns = nullptr);
  // Releases every parked env regardless of budget (shutdown).
  std::vector<int> ReleaseAll();

  int64_t budget() const;  // units each env may take at the current version
  int64_t topped_up_quotas() const;
  int parked() const;
  uint64_t parks() const;  // times an env was parked

 private:
  const int64_t quota_;
  const int64_t max_lag_;
  const Listener listener_;
  StarvedNotices starved_;
  mutable std::mutex mu_;
  uint64_t version_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t topped_up_ ABSL_GUARDED_BY(mu_) = 0;  // quotas added by TopUp
  std::vector<int64_t> parked_unit_ ABSL_GUARDED_BY(mu_);   // -1: not parked
  std::vector<int64_t> parked_at_ns_ ABSL_GUARDED_BY(mu_);  // SteadyNowNs
  int parked_count_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t Budget() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Admits the parked envs within the budget (Advance and TopUp).
  std::vector<int> AdmitParked(int64_t* parked_ns)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  uint64_t parks_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_ROLLOUT_ADMISSION_GATE_H_
