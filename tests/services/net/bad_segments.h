// File: tests/services/net/bad_segments.h
// -----------------------------------------------------------------------------
// One malformed TrajectorySegment per field a learner must refuse, each made
// from a valid PPO segment (n decisions, the last not done, a bootstrap row,
// executed = 1, versions at or below the learner's) and named by the field
// the refusal must name. Shared by the wire-format unit test and the test
// against a live `serve learner`.
//
// Example:
//   for (const BadSegment& b : BadSegments({.num_envs = 4, .num_tasks = 4,
//                                          .capacity = 16, .execute = 4})) {
//     v1::TrajectorySegment m = valid;
//     b.mutate(&m);   // DecodeSegment(m, ...) must name b.field
//   }
// -----------------------------------------------------------------------------
#ifndef RLVLA3_TESTS_SERVICES_NET_BAD_SEGMENTS_H_
#define RLVLA3_TESTS_SERVICES_NET_BAD_SEGMENTS_H_

#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "rlvla3/v1/rollout.pb.h"

namespace rlvla3::testutil {

struct SegmentRanges {
  int num_envs = 4, num_tasks = 4, capacity = 16, execute = 4;
};

struct BadSegment {
  std::string name;   // test name suffix
  std::string field;  // what the refusal must name
  std::function<void(v1::TrajectorySegment*)> mutate;
};
inline std::ostream& operator<<(std::ostream& os, const BadSegment& b) {
  return os << b.name;
}

// Element `i` of a tensor's raw data set to `v` (the bytes of T).
template <typename T>
void SetElement(v1::Tensor* t, int i, T v) {
  std::memcpy(t->mutable_data()->data() + i * sizeof(T), &v, sizeof(T));
}

// The cases, grouped by the part of the message they break; BadSegments
// lists them in this order.

// The header's ids out of range.
inline std::vector<BadSegment> BadIds(const SegmentRanges& r) {
  using M = v1::TrajectorySegment;
  return {
      {"TaskIdIsTheNumberOfTasks", "segment.task_id",
       [=](M* m) { m->set_task_id(static_cast<uint32_t>(r.num_tasks)); }},
      {"TaskIdIsTwoToThe31", "segment.task_id",
       [](M* m) { m->set_task_id(1u << 31); }},
      {"EnvIdIsTwoToThe31", "segment.env_id",
       [](M* m) { m->set_env_id(1u << 31); }},
      {"EnvIdIsTheNumberOfEnvs", "segment.env_id",
       [=](M* m) { m->set_env_id(static_cast<uint32_t>(r.num_envs)); }},
  };
}

// Per-decision integer rows (executed steps, done flags, policy versions)
// holding values they cannot hold.
inline std::vector<BadSegment> BadPerDecisionCodes(const SegmentRanges& r) {
  using M = v1::TrajectorySegment;
  return {
      {"ExecutedIsNine", "segment.executed",
       [](M* m) { SetElement<uint8_t>(m->mutable_executed(), 0, 9); }},
      {"ExecutedAboveExecuteSteps", "segment.executed",
       [=](M* m) {
         SetElement<uint8_t>(m->mutable_executed(), 1,
                             static_cast<uint8_t>(r.execute + 1));
       }},
      {"ExecutedIsZero", "segment.executed",
       [](M* m) { SetElement<uint8_t>(m->mutable_executed(), 0, 0); }},
      {"DoneIsSeven", "segment.dones",
       [](M* m) { SetElement<uint8_t>(m->mutable_dones(), 0, 7); }},
      {"VersionIsAMillion", "segment.policy_versions",
       [](M* m) {
         SetElement<int64_t>(m->mutable_policy_versions(), 0, 1000000);
       }},
      {"VersionIsNegative", "segment.policy_versions",
       [](M* m) { SetElement<int64_t>(m->mutable_policy_versions(), 0, -1); }},
  };
}

// The decision count, the index and the episode summary fields.
inline std::vector<BadSegment> BadCountsAndEpisode(const SegmentRanges& r) {
  using M = v1::TrajectorySegment;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  return {
      {"NoDecisions", "segment.decisions", [](M* m) { m->set_decisions(0); }},
      {"DecisionsOverCapacity", "segment.decisions",
       [=](M* m) { m->set_decisions(static_cast<uint32_t>(r.capacity + 1)); }},
      {"DecisionsDisagreeWithTensors", "segment.",
       [](M* m) { m->set_decisions(m->decisions() - 1); }},
      {"IndexIsNegative", "segment.index", [](M* m) { m->set_index(-1); }},
      {"EpisodeReturnIsNaN", "segment.episode_return",
       [=](M* m) { m->set_episode_return(nan); }},
      {"SuccessWithoutEpisodeEnd", "segment.success",
       [](M* m) { m->set_success(true); }},
      {"EpisodeEndWithoutDone", "segment.ends_episode",
       [](M* m) { m->set_ends_episode(true); }},
  };
}

// The bootstrap flag disagreeing with the rows or the done flags.
inline std::vector<BadSegment> BadBootstrap() {
  using M = v1::TrajectorySegment;
  return {
      {"MidEpisodeWithoutBootstrap", "segment.has_bootstrap",
       [](M* m) {
         // The flag and the rows agree; the value estimate has no input.
         m->set_has_bootstrap(false);
         const int n = static_cast<int>(m->decisions());
         for (int c = 0; c < 2; ++c) {
           v1::Tensor* t = m->mutable_images(c)->mutable_rgb();
           t->mutable_data()->resize(t->data().size() / (n + 1) * n);
           t->set_shape(0, n);
         }
         v1::Tensor* p = m->mutable_proprio();
         p->mutable_data()->resize(p->data().size() / (n + 1) * n);
         p->set_shape(0, n);
       }},
      {"BootstrapFlagWithoutItsRow", "segment.images[0].rgb",
       [](M* m) {
         m->set_has_bootstrap(false);
         SetElement<uint8_t>(m->mutable_dones(),
                             static_cast<int>(m->decisions()) - 1, 1);
       }},
  };
}

// Float rows holding NaN or infinity.
inline std::vector<BadSegment> BadFloats() {
  using M = v1::TrajectorySegment;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  return {
      {"RewardIsNaN", "segment.rewards",
       [=](M* m) { SetElement<float>(m->mutable_rewards(), 0, nan); }},
      {"ValueIsInf", "segment.values",
       [=](M* m) { SetElement<float>(m->mutable_values(), 1, inf); }},
      {"LogProbIsNaN", "segment.behaviour_log_probs",
       [=](M* m) {
         SetElement<float>(m->mutable_behaviour_log_probs(), 2, nan);
       }},
      {"ProprioIsNaN", "segment.proprio",
       [=](M* m) { SetElement<float>(m->mutable_proprio(), 0, nan); }},
  };
}

// Tensors of the wrong dtype, shape, count, order or size, and no message.
inline std::vector<BadSegment> BadTensorLayouts() {
  using M = v1::TrajectorySegment;
  return {
      {"LogProbsAsFloat64", "segment.behaviour_log_probs",
       [](M* m) {
         m->mutable_behaviour_log_probs()->set_dtype(v1::DTYPE_FLOAT64);
       }},
      {"DonesAsInt64", "segment.dones",
       [](M* m) { m->mutable_dones()->set_dtype(v1::DTYPE_INT64); }},
      {"TokensOfTheWrongShape", "segment.action_tokens",
       [](M* m) { m->mutable_action_tokens()->set_shape(2, 6); }},
      {"OneCamera", "segment.images",
       [](M* m) { m->mutable_images()->RemoveLast(); }},
      {"CamerasSwapped", "segment.images",
       [](M* m) { m->mutable_images()->SwapElements(0, 1); }},
      {"ImageBytesShort", "segment.images[1].rgb",
       [](M* m) {
         std::string* d = m->mutable_images(1)->mutable_rgb()->mutable_data();
         d->resize(d->size() - 1);
       }},
      {"EmptyMessage", "segment.decisions", [](M* m) { m->Clear(); }},
  };
}

inline std::vector<BadSegment> BadSegments(const SegmentRanges& r) {
  std::vector<BadSegment> all;
  for (std::vector<BadSegment> part :
       {BadIds(r), BadPerDecisionCodes(r), BadCountsAndEpisode(r),
        BadBootstrap(), BadFloats(), BadTensorLayouts()}) {
    for (BadSegment& b : part) all.push_back(std::move(b));
  }
  return all;
}

}  // namespace rlvla3::testutil

#endif  // RLVLA3_TESTS_SERVICES_NET_BAD_SEGMENTS_H_
