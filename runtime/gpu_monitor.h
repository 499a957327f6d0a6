// File: runtime/gpu_monitor.h
// -----------------------------------------------------------------------------
// How busy the machine's GPUs are, as nvidia-smi reports it: NVML's
// utilization (the share of the last sample period, 1/6 s to 1 s, in which a
// kernel ran) and the memory in use, averaged over the GPUs NVML sees (a
// Kubernetes pod sees only its own). NVML is the driver's library
// (libnvidia-ml.so.1), opened at run time, so nothing links against it and a
// machine without an NVIDIA driver simply has no monitor (available() false).
// Open once per run; Sample() is cheap (a few driver calls) and thread-safe.
//
// Example:
//   GpuMonitor gpus;  // opened once, at the top of a run
//   if (gpus.available()) {
//     const GpuSample s = gpus.Sample();
//     printf("GPU busy %.0f%%, %.0f MiB\n", s.busy_pct, s.memory_used_mib);
//   }
// -----------------------------------------------------------------------------
#ifndef RLVLA3_RUNTIME_GPU_MONITOR_H_
#define RLVLA3_RUNTIME_GPU_MONITOR_H_

#include <memory>
#include <string>

namespace rlvla3 {

struct GpuSample {
  double busy_pct = -1;         // -1: no reading
  double memory_used_mib = -1;  // -1: no reading
};

class GpuMonitor {
 public:
  GpuMonitor();  // opens NVML if the driver has it; never fails
  ~GpuMonitor();
  GpuMonitor(const GpuMonitor&) = delete;
  GpuMonitor& operator=(const GpuMonitor&) = delete;

  bool available() const;
  int device_count() const;
  // Why there is no monitor ("no libnvidia-ml.so.1 (no NVIDIA driver)", ...);
  // empty when available.
  const std::string& why_unavailable() const { return why_; }
  // The GPUs' mean utilization and memory in use now; -1s if unavailable or
  // if NVML fails to answer.
  GpuSample Sample() const;

 private:
  struct Nvml;
  std::unique_ptr<Nvml> nvml_;
  std::string why_;
};

}  // namespace rlvla3

#endif  // RLVLA3_RUNTIME_GPU_MONITOR_H_
