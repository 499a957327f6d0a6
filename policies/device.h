// File: policies/device.h
// -----------------------------------------------------------------------------
// Where a policy's tensors live, and how a batch gets there. A device is
// named as in the config ("cpu", "cuda", "cuda:N"); ParseDevice checks that
// this machine has it. A batch bound for a CUDA device is assembled on the
// host in pinned (page-locked) memory (HostStaging) and crosses in one
// non-blocking copy per tensor (ToDevice), so the host never waits for it;
// instruction lengths stay on the host, where the forward pass reads them.
// AutocastGuard runs a forward pass under bf16 autocast on the device's type
// (LibTorch 1.13 and 2.x alike).
//
// Example:
//   absl::StatusOr<at::Device> d = ParseDevice("cuda:0");
//   if (!d.ok()) return d.status();  // "no CUDA device on this machine ..."
//   PolicyInput host = ...;           // filled in HostStaging(*d) tensors
//   PolicyInput in = ToDevice(host, *d);
//   { AutocastGuard bf16(*d, /*enabled=*/true); out = net->forward(in); }
// -----------------------------------------------------------------------------
#ifndef RLVLA3_POLICIES_DEVICE_H_
#define RLVLA3_POLICIES_DEVICE_H_

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/core/TensorOptions.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "policies/policy.h"

namespace rlvla3 {

// The device `spec` names (runtime/device_name.h), if this machine has it;
// else InvalidArgument saying why ("no CUDA device on this machine ...",
// "this machine has 1 CUDA device (cuda:0)").
absl::StatusOr<at::Device> ParseDevice(absl::string_view spec);

// CUDA devices LibTorch sees (0 in a CPU-only LibTorch).
int CudaDeviceCount();

// "CPU only" or "1 x NVIDIA H100 80GB HBM3" (names in CUDA builds).
std::string DescribeGpus();

// Host tensor options for a batch bound for `device`: pinned for CUDA.
at::TensorOptions HostStaging(const at::Device& device, at::ScalarType dtype);

// `in` on `device`, one non-blocking copy per tensor (a no-op where it is
// already there); text_len stays on the host.
PolicyInput ToDevice(const PolicyInput& in, const at::Device& device);

// `t` on `device` without waiting for the copy. A host tensor bound for a
// GPU must be in pinned memory (HostStaging): a copy from pageable memory
// would make the host wait, so it is refused (c10::Error naming the shape).
at::Tensor ToDevice(const at::Tensor& t, const at::Device& device);

// A 1-d int64 / float64 tensor of `values` on `device`, staged in pinned
// memory for a GPU (one non-blocking copy).
at::Tensor HostValuesToDevice(const std::vector<int64_t>& values,
                              const at::Device& device);
at::Tensor HostValuesToDevice(const std::vector<double>& values,
                              const at::Device& device);

// While alive, ops on `device`'s type run under bf16 autocast (if enabled);
// restores the previous state on destruction. One thread's state only.
class AutocastGuard {
 public:
  AutocastGuard(const at::Device& device, bool enabled);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  bool enabled_;
  bool cuda_;
  bool was_enabled_ = false;
  at::ScalarType was_dtype_ = at::kFloat;
};

}  // namespace rlvla3

#endif  // RLVLA3_POLICIES_DEVICE_H_
