// File: tests/policies/small_tiny_vla.h
// -----------------------------------------------------------------------------
// The small TinyVLA the policy tests share: 16 words, width 32, 3x3 image
// tokens per camera, chunks of 3. Fast on a CPU, every part of the network
// still there.
//
// Example:
//   TinyVLAPolicy policy(TinyVLA(testutil::SmallTinyVLA()), 0);
// -----------------------------------------------------------------------------
#ifndef RLVLA3_TESTS_POLICIES_SMALL_TINY_VLA_H_
#define RLVLA3_TESTS_POLICIES_SMALL_TINY_VLA_H_

#include "policies/tiny_vla.h"

namespace rlvla3::testutil {

inline TinyVLAOptions SmallTinyVLA() {
  return TinyVLAOptions()
      .vocab_size(16)
      .d_model(32)
      .heads(4)
      .layers(2)
      .grid(3)
      .stem_channels(8)
      .chunk(3);
}

}  // namespace rlvla3::testutil

#endif  // RLVLA3_TESTS_POLICIES_SMALL_TINY_VLA_H_
