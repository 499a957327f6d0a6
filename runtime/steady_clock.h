// File: runtime/steady_clock.h
// -----------------------------------------------------------------------------
// The one monotonic timestamp the roles stamp on requests, segments and stage
// intervals: nanoseconds of std::chrono::steady_clock (comparable within a
// process only; wall-clock times on the wire are Unix ns).
//
// SecondsSince: seconds of steady_clock since `t0`, for loops and reports
// that time themselves.
//
// Example:
//   const int64_t t0 = SteadyNowNs();  ...  double ms = (SteadyNowNs() - t0) /
//   1e6;
//   const auto start = std::chrono::steady_clock::now();
//   while (SecondsSince(start) < seconds) { ... }
// -----------------------------------------------------------------------------
#ifndef RLVLA3_RUNTIME_STEADY_CLOCK_H_
#define RLVLA3_RUNTIME_STEADY_CLOCK_H_

#include <chrono>
#include <cstdint>

namespace rlvla3 {

inline int64_t SteadyNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

inline double SecondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
      .count();
}

}  // namespace rlvla3

#endif  // RLVLA3_RUNTIME_STEADY_CLOCK_H_
