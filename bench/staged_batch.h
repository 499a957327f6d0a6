// File: bench/staged_batch.h
// -----------------------------------------------------------------------------
// What the device benches share: a batch of random 64x64 observations as they
// arrive (pageable) with its staging copy (pinned for a GPU), moved the way an
// actor moves one, and Measure, which times a call after two warm-up calls
// and counts the host syncs LibTorch reports per call.
//
// Example:
//   StagedBatch batch(64, device);
//   Measured m = Measure(3.0, 64, [&] { policy.Act(batch.OnDevice(device),
//   false); });
// -----------------------------------------------------------------------------
#ifndef RLVLA3_BENCH_STAGED_BATCH_H_
#define RLVLA3_BENCH_STAGED_BATCH_H_

#include <torch/torch.h>

#include <chrono>
#include <cstdint>

#include "policies/device.h"
#include "policies/host_sync_counter.h"
#include "policies/policy.h"

namespace rlvla3 {

inline constexpr int kBenchImage = 64, kBenchText = 16;

// A pageable batch (as observations arrive) and its staging copy (pinned
// for a GPU); every instruction is kBenchText tokens long.
struct StagedBatch {
  PolicyInput source, staged;
  StagedBatch(int64_t B, const at::Device& device) {
    source.images = torch::randint(0, 256, {B, 2, kBenchImage, kBenchImage, 3},
                                   torch::kByte);
    source.proprio = torch::randn({B, 8});
    source.text = torch::randint(2, 64, {B, kBenchText}, torch::kLong);
    source.text_len = torch::full({B}, kBenchText, torch::kLong);
    staged.images =
        torch::empty_like(source.images, HostStaging(device, torch::kByte));
    staged.proprio =
        torch::empty_like(source.proprio, HostStaging(device, torch::kFloat));
    staged.text =
        torch::empty_like(source.text, HostStaging(device, torch::kLong));
    staged.text_len = source.text_len;
  }
  PolicyInput OnDevice(const at::Device& device) {
    staged.images.copy_(source.images);
    staged.proprio.copy_(source.proprio);
    staged.text.copy_(source.text);
    return ToDevice(staged, device);
  }
};

struct Measured {
  double per_second = 0;
  double syncs_per_call = -1;  // -1: LibTorch cannot count here (no CUDA)
};

template <typename F>
Measured Measure(double seconds, int64_t per_call, F&& call) {
  HostSyncCounter syncs;
  call();  // warm-up (kernels, allocator), as the anchor
  call();
  syncs.Reset();
  int64_t calls = 0;
  const auto t0 = std::chrono::steady_clock::now();
  double wall = 0;
  while ((wall = std::chrono::duration<double>(
                     std::chrono::steady_clock::now() - t0)
                     .count()) < seconds) {
    call();
    ++calls;
  }
  Measured m;
  m.per_second = static_cast<double>(calls * per_call) / wall;
  if (syncs.available() && calls > 0)
    m.syncs_per_call = static_cast<double>(syncs.count()) / calls;
  return m;
}

}  // namespace rlvla3

#endif  // RLVLA3_BENCH_STAGED_BATCH_H_
