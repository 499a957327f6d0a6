#include "policies/device.h"

#include <ATen/autocast_mode.h>
#include <torch/cuda.h>
#include <torch/version.h>

#include <cstring>
#include <optional>

#include "absl/strings/str_cat.h"
#include "runtime/device_name.h"

#if defined(RLVLA3_WITH_CUDA) && __has_include(<cuda_runtime_api.h>)
#include <cuda_runtime_api.h>
#define RLVLA3_GPU_NAMES 1
#endif

// LibTorch 2.4 keys autocast by device type; 1.13 has one call per type.
#if TORCH_VERSION_MAJOR > 2 || \
    (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
#define RLVLA3_AUTOCAST_BY_DEVICE 1
#endif

namespace rlvla3 {

int CudaDeviceCount() { return static_cast<int>(torch::cuda::device_count()); }

absl::StatusOr<at::Device> ParseDevice(absl::string_view spec) {
  const std::optional<DeviceName> name = ParseDeviceName(spec);
  if (!name.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", spec, "' is not a device (cpu, cuda or cuda:N)"));
  }
  if (!name->cuda) return at::Device(at::kCPU);
  const int index = name->index;
  const int n = CudaDeviceCount();
  if (n == 0) {
    return absl::InvalidArgumentError(
        "no CUDA device on this machine (this LibTorch sees none; a CPU-only "
        "LibTorch never does: see docs/gpu.md, Building with CUDA)");
  }
  if (index >= n) {
    return absl::InvalidArgumentError(absl::StrCat(
        "this machine has ", n, " CUDA device", n == 1 ? "" : "s", " (cuda:0",
        n > 1 ? "..cuda:" : "", n > 1 ? absl::StrCat(n - 1) : "", ")"));
  }
  return at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(index));
}

std::string DescribeGpus() {
  const int n = CudaDeviceCount();
  if (n == 0) return "CPU only";
#ifdef RLVLA3_GPU_NAMES
  cudaDeviceProp p;
  if (cudaGetDeviceProperties(&p, 0) == cudaSuccess) {
    return absl::StrCat(n, " x ", p.name);
  }
#endif
  return absl::StrCat(n, " x CUDA device");
}

at::TensorOptions HostStaging(const at::Device& device, at::ScalarType dtype) {
  return at::TensorOptions().dtype(dtype).pinned_memory(device.is_cuda());
}

at::Tensor ToDevice(const at::Tensor& t, const at::Device& device) {
  if (!t.defined() || t.device() == device) return t;
  TORCH_CHECK(!(device.is_cuda() && t.is_cpu() && !t.is_pinned()),
              "ToDevice: a host tensor of shape ", t.sizes(),
              " in pageable memory bound for ", device,
              " (the copy would block the host): stage it with HostStaging");
  return t.to(t.options().device(device), /*non_blocking=*/true);
}

namespace {

template <typename T>
at::Tensor ValuesToDevice(const std::vector<T>& values, at::ScalarType dtype,
                          const at::Device& device) {
  at::Tensor host = at::empty({static_cast<int64_t>(values.size())},
                              HostStaging(device, dtype));
  if (!values.empty()) {
    std::memcpy(host.data_ptr(), values.data(), sizeof(T) * values.size());
  }
  return ToDevice(host, device);
}

}  // namespace

at::Tensor HostValuesToDevice(const std::vector<int64_t>& values,
                              const at::Device& device) {
  return ValuesToDevice(values, at::kLong, device);
}

at::Tensor HostValuesToDevice(const std::vector<double>& values,
                              const at::Device& device) {
  return ValuesToDevice(values, at::kDouble, device);
}

PolicyInput ToDevice(const PolicyInput& in, const at::Device& device) {
  PolicyInput out;
  out.images = ToDevice(in.images, device);
  out.proprio = ToDevice(in.proprio, device);
  out.text = ToDevice(in.text, device);
  out.text_len = in.text_len;
  return out;
}

AutocastGuard::AutocastGuard(const at::Device& device, bool enabled)
    : enabled_(enabled), cuda_(device.is_cuda()) {
  if (!enabled_) return;
#ifdef RLVLA3_AUTOCAST_BY_DEVICE
  const at::DeviceType type = cuda_ ? at::kCUDA : at::kCPU;
  was_enabled_ = at::autocast::is_autocast_enabled(type);
  was_dtype_ = at::autocast::get_autocast_dtype(type);
  at::autocast::set_autocast_dtype(type, at::kBFloat16);
  at::autocast::set_autocast_enabled(type, true);
#else
  if (cuda_) {
    was_enabled_ = at::autocast::is_enabled();
    was_dtype_ = at::autocast::get_autocast_gpu_dtype();
    at::autocast::set_autocast_gpu_dtype(at::kBFloat16);
    at::autocast::set_enabled(true);
  } else {
    was_enabled_ = at::autocast::is_cpu_enabled();
    was_dtype_ = at::autocast::get_autocast_cpu_dtype();
    at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
    at::autocast::set_cpu_enabled(true);
  }
#endif
  at::autocast::increment_nesting();
}

AutocastGuard::~AutocastGuard() {
  if (!enabled_) return;
  // As torch.autocast: the cast weights are cached until the outermost exit.
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
#ifdef RLVLA3_AUTOCAST_BY_DEVICE
  const at::DeviceType type = cuda_ ? at::kCUDA : at::kCPU;
  at::autocast::set_autocast_enabled(type, was_enabled_);
  at::autocast::set_autocast_dtype(type, was_dtype_);
#else
  if (cuda_) {
    at::autocast::set_enabled(was_enabled_);
    at::autocast::set_autocast_gpu_dtype(was_dtype_);
  } else {
    at::autocast::set_cpu_enabled(was_enabled_);
    at::autocast::set_autocast_cpu_dtype(was_dtype_);
  }
#endif
}

}  // namespace rlvla3
