// File: policies/image_augment.h
// -----------------------------------------------------------------------------
// Image augmentation for behaviour cloning: random shifts (DrQ, Kostrikov et
// al. 2020). Each image of a batch is padded by `pad` pixels on every side by
// repeating its edge pixels, then cropped back to its size at a random offset
// in [0, 2 * pad] per axis. With a few dozen demonstrations per task, a policy
// otherwise memorises exact pixel positions; shifted copies make it read
// object positions relative to the gripper and each other instead.
//
// Example:
//   at::Tensor rows = ...;                          // uint8 [B, H, W, 3]
//   at::Tensor shifted = RandomShift(rows, /*pad=*/4, &rng);
// -----------------------------------------------------------------------------
#ifndef RLVLA3_POLICIES_IMAGE_AUGMENT_H_
#define RLVLA3_POLICIES_IMAGE_AUGMENT_H_

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <random>

namespace rlvla3 {

// A copy of `images` (uint8 [B, H, W, C], channels last) with every image
// shifted by its own random (dy, dx) in [-pad, pad]^2 and the uncovered border
// filled with the nearest edge pixels. pad == 0 returns `images` unchanged.
at::Tensor RandomShift(const at::Tensor& images, int64_t pad,
                       std::mt19937_64* rng);

}  // namespace rlvla3

#endif  // RLVLA3_POLICIES_IMAGE_AUGMENT_H_
