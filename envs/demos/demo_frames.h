// File: envs/demos/demo_frames.h
// -----------------------------------------------------------------------------
// What reading a field's file does to its values before a run sees them:
// frames stored bottom row first flipped, frames of another size resized
// (area-averaged when both factors are whole, else bilinear with half-pixel
// centres), and robosuite's quaternions (x, y, z, w) turned into the
// axis-angle the envs write (MuJoCo's mju_quat2Vel: the angle in (-pi, pi];
// robosuite's quat2axisangle agrees for angles up to pi).
//
// Example:
//   FlipRows(frames.data(), t, h, w);
//   std::vector<uint8_t> small = ResizeFrames(frames.data(), t, 128, 128,
//                                             64, 64);
// -----------------------------------------------------------------------------
#ifndef RLVLA3_ENVS_DEMOS_DEMO_FRAMES_H_
#define RLVLA3_ENVS_DEMOS_DEMO_FRAMES_H_

#include <cstdint>
#include <vector>

namespace rlvla3 {

// Flips each of `frames` [h, w, 3] frames upside down, in place.
void FlipRows(uint8_t* frames, int64_t count, int64_t h, int64_t w);

// `count` frames [h, w, 3] resized to [out_h, out_w, 3].
std::vector<uint8_t> ResizeFrames(const uint8_t* frames, int64_t count,
                                  int64_t h, int64_t w, int64_t out_h,
                                  int64_t out_w);

// `count` quaternions (x, y, z, w) as axis-angles (3 values each); a
// rotation of (nearly) zero angle is the zero vector.
std::vector<float> QuatsToAxisAngles(const float* quats, int64_t count);

}  // namespace rlvla3

#endif  // RLVLA3_ENVS_DEMOS_DEMO_FRAMES_H_
