// File: policies/host_sync_counter.h
// -----------------------------------------------------------------------------
// Counts the host syncs LibTorch's CUDA backend performs on this thread: every
// operation that makes the host wait for the GPU (a device-to-host copy into
// pageable memory, .item(), a stream or device synchronize). It switches on
// LibTorch's own sync debug mode (warn) while alive and counts the warnings
// that mode raises, so nothing is inferred: what is counted is what LibTorch
// reports as synchronizing. In a build without CUDA it counts nothing and
// available() is false. For measurements (bench/device_figures), not for the
// run path: the debug mode is process-wide while a counter lives.
//
// Example:
//   HostSyncCounter syncs;
//   for (int i = 0; i < 100; ++i) RunOneBatch();
//   if (syncs.available()) printf("%.2f syncs/batch\n", syncs.count() / 100.0);
// -----------------------------------------------------------------------------
#ifndef RLVLA3_POLICIES_HOST_SYNC_COUNTER_H_
#define RLVLA3_POLICIES_HOST_SYNC_COUNTER_H_

#include <cstdint>
#include <memory>

namespace rlvla3 {

class HostSyncCounter {
 public:
  HostSyncCounter();
  ~HostSyncCounter();
  HostSyncCounter(const HostSyncCounter&) = delete;
  HostSyncCounter& operator=(const HostSyncCounter&) = delete;

  // True in a CUDA build (the count is real); false otherwise.
  bool available() const;
  // Syncs seen since construction or the last Reset().
  int64_t count() const;
  void Reset();

 private:
  class Handler;
  std::unique_ptr<Handler> handler_;
};

}  // namespace rlvla3

#endif  // RLVLA3_POLICIES_HOST_SYNC_COUNTER_H_
