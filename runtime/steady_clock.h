// File: runtime/steady_clock.h
// -----------------------------------------------------------------------------
// The one monotonic timestamp the roles stamp on requests, segments and stage
// intervals: nanoseconds of std::chrono::steady_clock (comparable within a
// process only; wall-clock times on the wire are Unix ns).
//
// Example:
//   const int64_t t0 = SteadyNowNs();  ...  double ms = (SteadyNowNs() - t0) /
//   1e6;
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

}  // namespace rlvla3

#endif  // RLVLA3_RUNTIME_STEADY_CLOCK_H_
