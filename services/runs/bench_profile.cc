#include "services/runs/bench_profile.h"

#include <torch/csrc/autograd/profiler_kineto.h>
#include <torch/torch.h>

#include <cstdint>
#include <fstream>
#include <functional>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "runtime/logging.h"
#include "services/runs/stage_drivers.h"

namespace rlvla3 {
namespace {

namespace prof = torch::profiler::impl;

// Event times: microseconds in LibTorch 1.13, nanoseconds from 2.x.
template <typename E>
auto StartUs(const E& e, int) -> decltype(e.startNs(), double()) {
  return static_cast<double>(e.startNs()) / 1e3;
}
template <typename E>
double StartUs(const E& e, long) {
  return static_cast<double>(e.startUs());
}
template <typename E>
auto DurationUs(const E& e, int) -> decltype(e.durationNs(), double()) {
  return static_cast<double>(e.durationNs()) / 1e3;
}
template <typename E>
double DurationUs(const E& e, long) {
  return static_cast<double>(e.durationUs());
}

struct Counted {
  int64_t ops = 0, kernels = 0;
};

// Runs `work` under the profiler; appends its events to `trace` (on row
// `pid`, times relative to `origin_us`, set by the first session).
Counted Profile(bool gpu, const std::function<void()>& work, int pid,
                double* origin_us, std::vector<std::string>* trace) {
  const prof::ProfilerConfig config(prof::ProfilerState::KINETO);
  std::set<prof::ActivityType> activities = {prof::ActivityType::CPU};
  if (gpu) activities.insert(prof::ActivityType::CUDA);
  torch::autograd::profiler::prepareProfiler(config, activities);
  torch::autograd::profiler::enableProfiler(config, activities);
  work();
  if (gpu) torch::cuda::synchronize();
  const std::unique_ptr<torch::autograd::profiler::ProfilerResult> result =
      torch::autograd::profiler::disableProfiler();
  Counted n;
  for (const auto& e : result->events()) {
    const bool kernel = e.deviceType() == c10::DeviceType::CUDA;
    (kernel ? n.kernels : n.ops) += 1;
    const double start = StartUs(e, 0);
    if (*origin_us == 0) *origin_us = start;
    trace->push_back(absl::StrFormat(
        R"({"name": %s, "ph": "X", "ts": %.3f, "dur": %.3f, "pid": %d, "tid": %d})",
        JsonQuoted(e.name()), start - *origin_us, DurationUs(e, 0), pid,
        kernel ? 1 : 0));
  }
  return n;
}

absl::Status WriteTrace(const std::string& path,
                        const std::vector<std::string>& events) {
  std::ofstream out(path, std::ios::trunc);
  out << R"({"displayTimeUnit": "ms", "traceEvents": [)"
      << "\n";
  const char* names[] = {"inference batches", "learner steps"};
  for (int pid = 0; pid < 2; ++pid) {
    out << absl::StrFormat(
               R"({"name": "process_name", "ph": "M", "pid": %d, "args": {"name": "%s"}},)",
               pid, names[pid])
        << "\n";
  }
  for (size_t i = 0; i < events.size(); ++i) {
    out << events[i] << (i + 1 < events.size() ? ",\n" : "\n");
  }
  out << "]}\n";
  out.close();
  if (!out) return absl::UnavailableError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ProfileFigures> ProfileStages(const LocalEngineOptions& o,
                                             const EngineParts& parts,
                                             const std::string& trace_path,
                                             int batches, int steps) {
  ProfileFigures p;
  p.trace_path = trace_path;
  p.batches = batches;
  p.steps = steps;
  std::vector<std::string> trace;
  double origin = 0;
  InferenceStageDriver inference(o, parts);
  inference.Batch();  // warm-up, outside the trace
  inference.Batch();
  const bool inference_gpu = o.inference.device.is_cuda();
  const Counted i = Profile(
      inference_gpu,
      [&] {
        for (int b = 0; b < batches; ++b) inference.Batch();
      },
      0, &origin, &trace);
  p.inference_ops_per_batch = static_cast<double>(i.ops) / batches;
  if (inference_gpu)
    p.inference_kernels_per_batch = static_cast<double>(i.kernels) / batches;
  LearnerStageDriver learner(o, parts);
  learner.Step();  // warm-up
  const bool learner_gpu = o.learner.core.device.is_cuda();
  const Counted l = Profile(
      learner_gpu,
      [&] {
        for (int s = 0; s < steps; ++s) learner.Step();
      },
      1, &origin, &trace);
  p.learner_ops_per_step = static_cast<double>(l.ops) / steps;
  if (learner_gpu)
    p.learner_kernels_per_step = static_cast<double>(l.kernels) / steps;
  if (absl::Status s = WriteTrace(trace_path, trace); !s.ok()) return s;
  return p;
}

std::string FormatProfile(const ProfileFigures& p) {
  auto kernels = [](double k) {
    return k < 0 ? std::string("- (CPU)") : absl::StrFormat("%.0f", k);
  };
  return absl::StrFormat(
      "profile (%d inference batches, %d optimizer steps): LibTorch ops per "
      "batch %.0f, GPU kernels per batch %s; ops per step %.0f, kernels per "
      "step %s\ntrace: %s (open in https://ui.perfetto.dev)\n",
      p.batches, p.steps, p.inference_ops_per_batch,
      kernels(p.inference_kernels_per_batch), p.learner_ops_per_step,
      kernels(p.learner_kernels_per_step), p.trace_path);
}

}  // namespace rlvla3
