// Two images of the same state, equal up to the rasteriser's sub-pixel
// position: an image drawn into a tile away from the offscreen buffer's
// origin (batched readback, envs/renderer.h) may move a few edge pixels by a
// level or two. Stale or misplaced images differ in 35-50% of their bytes.
#ifndef RLVLA3_TESTS_ENVS_IMAGES_NEAR_H_
#define RLVLA3_TESTS_ENVS_IMAGES_NEAR_H_

#include <cstdint>
#include <cstdlib>
#include <vector>

namespace rlvla3::testutil {

// Same size, no byte off by more than 8 levels, at most 1% of bytes off.
inline bool ImagesNear(const std::vector<uint8_t>& a,
                       const std::vector<uint8_t>& b) {
  if (a.size() != b.size()) return false;
  size_t differ = 0;
  for (size_t k = 0; k < a.size(); ++k) {
    const int d = std::abs(int{a[k]} - int{b[k]});
    if (d > 8) return false;
    differ += d != 0;
  }
  return differ <= a.size() / 100;
}

}  // namespace rlvla3::testutil

#endif  // RLVLA3_TESTS_ENVS_IMAGES_NEAR_H_
