// File: runtime/rate_meter.h
// -----------------------------------------------------------------------------
// RateMeter: a counter's rate over the interval between its owner's last two
// ticks (a role's progress interval), readable from any thread. Readers
// (GetStatus, heartbeats) never reset the window, so every caller sees the
// same figure however often it asks.
//
// Example:
//   RateMeter frames;
//   every interval: frames.Tick(counter.value());      // the owner's loop
//   status->set_env_frames_per_s(frames.per_s());       // any thread
// -----------------------------------------------------------------------------
#ifndef RLVLA3_RUNTIME_RATE_METER_H_
#define RLVLA3_RUNTIME_RATE_METER_H_

#include <atomic>
#include <cstdint>

#include "runtime/steady_clock.h"

namespace rlvla3 {

class RateMeter {
 public:
  // The counter's value now; called by one thread (the owner's loop).
  void Tick(uint64_t count) {
    const int64_t now = SteadyNowNs();
    if (last_ns_ > 0 && now > last_ns_) {
      rate_.store(static_cast<double>(count - last_) * 1e9 /
                      static_cast<double>(now - last_ns_),
                  std::memory_order_relaxed);
    }
    last_ = count;
    last_ns_ = now;
  }
  // Per second over the last interval (0 before two ticks).
  double per_s() const { return rate_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> rate_{0};
  uint64_t last_ = 0;    // owner thread only
  int64_t last_ns_ = 0;  // owner thread only
};

}  // namespace rlvla3

#endif  // RLVLA3_RUNTIME_RATE_METER_H_
