#include "runtime/gpu_monitor.h"

#include <dlfcn.h>

#include <vector>

namespace rlvla3 {

// NVML's C API, the few calls used, declared as NVML's header declares them
// (nvml.h is not needed to build: the library is opened at run time).
struct GpuMonitor::Nvml {
  using Device = void*;
  struct Utilization {
    unsigned int gpu, memory;
  };
  struct Memory {
    unsigned long long total, free, used;
  };
  using InitFn = int (*)();
  using CountFn = int (*)(unsigned int*);
  using HandleFn = int (*)(unsigned int, Device*);
  using UtilFn = int (*)(Device, Utilization*);
  using MemFn = int (*)(Device, Memory*);
  static constexpr int kSuccess = 0;

  void* lib = nullptr;
  InitFn shutdown = nullptr;
  UtilFn utilization = nullptr;
  MemFn memory = nullptr;
  std::vector<Device> devices;

  ~Nvml() {
    if (shutdown != nullptr) shutdown();
    if (lib != nullptr) dlclose(lib);
  }

  template <typename F>
  bool Load(const char* name, F* fn) {
    *fn = reinterpret_cast<F>(dlsym(lib, name));
    return *fn != nullptr;
  }

  // Opens the library and lists the devices; the reason on failure.
  std::string Open() {
    lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) return "no libnvidia-ml.so.1 (no NVIDIA driver)";
    InitFn init = nullptr;
    CountFn count = nullptr;
    HandleFn handle = nullptr;
    if (!Load("nvmlInit_v2", &init) || !Load("nvmlShutdown", &shutdown) ||
        !Load("nvmlDeviceGetCount_v2", &count) ||
        !Load("nvmlDeviceGetHandleByIndex_v2", &handle) ||
        !Load("nvmlDeviceGetUtilizationRates", &utilization) ||
        !Load("nvmlDeviceGetMemoryInfo", &memory)) {
      shutdown = nullptr;
      return "libnvidia-ml.so.1 lacks the NVML calls used";
    }
    if (init() != kSuccess) {
      shutdown = nullptr;
      return "nvmlInit failed (driver not loaded?)";
    }
    unsigned int n = 0;
    if (count(&n) != kSuccess || n == 0) return "NVML sees no GPU";
    for (unsigned int i = 0; i < n; ++i) {
      Device d = nullptr;
      if (handle(i, &d) == kSuccess) devices.push_back(d);
    }
    return devices.empty() ? "NVML opens no GPU" : "";
  }
};

GpuMonitor::GpuMonitor() : nvml_(std::make_unique<Nvml>()) {
  why_ = nvml_->Open();
  if (!why_.empty()) nvml_->devices.clear();
}

GpuMonitor::~GpuMonitor() = default;

bool GpuMonitor::available() const { return !nvml_->devices.empty(); }

int GpuMonitor::device_count() const {
  return static_cast<int>(nvml_->devices.size());
}

GpuSample GpuMonitor::Sample() const {
  GpuSample s;
  double busy = 0, used = 0;
  int n = 0;
  for (Nvml::Device d : nvml_->devices) {
    Nvml::Utilization u{};
    Nvml::Memory m{};
    if (nvml_->utilization(d, &u) != Nvml::kSuccess ||
        nvml_->memory(d, &m) != Nvml::kSuccess)
      continue;
    busy += u.gpu;
    used += static_cast<double>(m.used) / (1024.0 * 1024.0);
    ++n;
  }
  if (n > 0) {
    s.busy_pct = busy / n;
    s.memory_used_mib = used / n;
  }
  return s;
}

}  // namespace rlvla3
