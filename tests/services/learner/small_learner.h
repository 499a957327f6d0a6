// The small TinyVLA and segment shape the learner tests train (learner_test,
// dp_rank), and random observations for their synthetic segments.
#ifndef RLVLA3_TESTS_SERVICES_ROLES_SMALL_LEARNER_H_
#define RLVLA3_TESTS_SERVICES_ROLES_SMALL_LEARNER_H_

#include <cstdint>
#include <random>

#include "policies/tiny_vla.h"
#include "runtime/channels/rollout_segment.h"

namespace rlvla3::testutil {

inline TinyVLAOptions SmallNet() {
  return TinyVLAOptions()
      .vocab_size(8)
      .max_text_len(4)
      .d_model(16)
      .heads(2)
      .layers(1)
      .grid(2)
      .patch(8)
      .stem_channels(4)
      .chunk(2);
}

// 16x16 cameras, chunks of 2, 4 decisions per segment.
inline SegmentShape SmallShape() {
  SegmentShape s;
  s.width = s.height = 16;
  s.chunk = 2;
  s.capacity = 4;
  return s;
}

// Clears `s` and fills its images, proprio and action tokens at random.
inline void RandomObservations(RolloutSegment* s, std::mt19937* rng) {
  s->Clear();
  for (auto& b : s->images) b = static_cast<uint8_t>((*rng)());
  for (auto& p : s->proprio) p = static_cast<float>((*rng)() % 100) / 100.0f;
  for (auto& t : s->tokens) t = static_cast<uint8_t>((*rng)());
}

}  // namespace rlvla3::testutil

#endif  // RLVLA3_TESTS_SERVICES_ROLES_SMALL_LEARNER_H_
