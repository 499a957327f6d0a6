// File: runtime/camera_limits.h
// -----------------------------------------------------------------------------
// How many cameras one observation may hold: the bound env.cameras, a
// policy's declaration and the wire's fixed per-request arrays share
// (ALOHA-style rigs use four).
//
// Example:
//   std::array<const uint8_t*, kMaxCameras> images{};
// -----------------------------------------------------------------------------
#ifndef RLVLA3_RUNTIME_CAMERA_LIMITS_H_
#define RLVLA3_RUNTIME_CAMERA_LIMITS_H_

namespace rlvla3 {

inline constexpr int kMaxCameras = 8;

}  // namespace rlvla3

#endif  // RLVLA3_RUNTIME_CAMERA_LIMITS_H_
