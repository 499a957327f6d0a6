// GpuMonitor against the machine it runs on: NVML's readings where an NVIDIA
// driver is loaded (the GPU machine), a reason and no readings elsewhere.
#include "runtime/gpu_monitor.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace rlvla3 {
namespace {

TEST(GpuMonitor, ReadsTheDriverWhereThereIsOneAndSaysWhyNotElsewhere) {
  const GpuMonitor gpus;
  const GpuSample s = gpus.Sample();
  if (!std::filesystem::exists("/dev/nvidiactl")) {
    EXPECT_FALSE(gpus.available());
    EXPECT_EQ(gpus.device_count(), 0);
    EXPECT_FALSE(gpus.why_unavailable().empty());
    EXPECT_EQ(s.busy_pct, -1);
    EXPECT_EQ(s.memory_used_mib, -1);
    return;
  }
  ASSERT_TRUE(gpus.available()) << gpus.why_unavailable();
  EXPECT_GE(gpus.device_count(), 1);
  EXPECT_TRUE(gpus.why_unavailable().empty());
  EXPECT_GE(s.busy_pct, 0);
  EXPECT_LE(s.busy_pct, 100);
  EXPECT_GE(s.memory_used_mib, 0);
}

}  // namespace
}  // namespace rlvla3
