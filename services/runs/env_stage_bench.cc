#include "services/runs/env_stage_bench.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>
#include <random>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "envs/egl_context.h"
#include "envs/manipulation_env.h"
#include "runtime/steady_clock.h"

namespace rlvla3 {
namespace {

using Clock = std::chrono::steady_clock;

// CPU time of every thread of this process, in seconds.
double ProcessCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// Resident bytes of this process (0 where /proc is not there).
double ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  long long pages = 0, resident = 0;
  if (!(statm >> pages >> resident)) return 0;
  return static_cast<double>(resident) *
         static_cast<double>(sysconf(_SC_PAGESIZE));
}

// A fixed-size uniform sample of step times (reservoir sampling, a fixed
// seed): allocated once, whatever the number of steps.
class StepSample {
 public:
  StepSample() : rng_(7) { kept_.reserve(kSize); }
  void Add(double ms) {
    ++seen_;
    if (kept_.size() < kSize) {
      kept_.push_back(ms);
      return;
    }
    const uint64_t slot = rng_() % seen_;
    if (slot < kSize) kept_[slot] = ms;
  }
  // cv, p50 and p99 into `f`.
  void Describe(EnvStageFigures* f) {
    if (kept_.empty()) return;
    double sum = 0, sq = 0;
    for (double x : kept_) sum += x, sq += x * x;
    const double n = static_cast<double>(kept_.size());
    const double mean = sum / n;
    const double var = std::max(0.0, sq / n - mean * mean);
    f->step_ms_cv = mean > 0 ? std::sqrt(var) / mean : 0;
    std::sort(kept_.begin(), kept_.end());
    const auto at = [&](double q) {
      return kept_[std::min(kept_.size() - 1,
                            static_cast<size_t>(q * (n - 1) + 0.5))];
    };
    f->step_ms_p50 = at(0.5);
    f->step_ms_p99 = at(0.99);
  }

 private:
  static constexpr size_t kSize = 8192;
  std::vector<double> kept_;
  uint64_t seen_ = 0;
  std::mt19937_64 rng_;
};

}  // namespace

absl::StatusOr<EnvStageFigures> MeasureEnvStage(const EnvPoolOptions& options,
                                                double seconds,
                                                int execute_steps) {
  const double resident0 = ResidentBytes();
  absl::StatusOr<std::unique_ptr<EnvPool>> pool = EnvPool::Create(options);
  if (!pool.ok()) return pool.status();
  EnvPool& p = **pool;
  StepSample sample;
  std::vector<int> ready;
  std::vector<float> zeros;
  // Each env's chunk step, as a rollout worker's decisions step it.
  std::vector<int> chunk_pos(static_cast<size_t>(p.num_envs()), 0);
  const double cpu0 = ProcessCpuSeconds();
  const auto t0 = Clock::now();
  const uint64_t steps0 = p.stats().steps;
  while (SecondsSince(t0) < seconds) {
    ready.clear();
    if (absl::Status s = p.Recv(1, absl::Seconds(30), &ready); !s.ok())
      return s;
    zeros.assign(ready.size() * kActionDim, 0.0f);
    for (int id : ready) {
      if (p.state(id).step > 0) sample.Add(p.state(id).step_ms);
      int& k = chunk_pos[static_cast<size_t>(id)];
      if (p.state(id).step == 0) k = 0;  // a new episode's first decision
      if (k + 1 < execute_steps) p.SkipImagesOnNextStep(id);
      k = (k + 1) % std::max(1, execute_steps);
    }
    if (absl::Status s = p.Send(ready, zeros); !s.ok()) return s;
  }
  const double wall = SecondsSince(t0);
  const double cpu = ProcessCpuSeconds() - cpu0;
  const EnvPoolStats st = p.stats();
  const double frames = static_cast<double>(st.steps - steps0);
  EnvStageFigures f;
  f.workers = p.num_threads();
  f.envs = p.num_envs();
  f.execute_steps = std::max(1, execute_steps);
  f.frames_per_s = frames / wall;
  f.wall_ms_per_frame = st.step_ms.count > 0 ? st.step_ms.mean() : 0;
  f.cpu_ms_per_frame = frames > 0 ? 1e3 * cpu / frames : 0;
  f.physics_ms = st.phases.physics_ms;
  f.render_ms = st.phases.render_ms;
  f.readback_ms = st.phases.readback_ms;
  f.handoff_ms = st.handoff_ms;
  sample.Describe(&f);
  f.host_bytes_per_env =
      std::max(0.0, ResidentBytes() - resident0) / std::max(1, f.envs);
  f.readback = kReadbackNames.Name(p.options().env.readback);
  f.backend = options.env.render
                  ? kRenderBackendNames.Name(p.options().env.render_backend)
                  : "none";
  p.Close();
  return f;
}

absl::StatusOr<EnvScaling> RunEnvScaling(
    const EnvPoolOptions& base, const std::vector<int>& workers,
    int envs_per_worker, double seconds,
    const std::vector<int>& execute_steps) {
  EnvScaling out;
  out.width = base.env.image_width;
  out.height = base.env.image_height;
  out.readback = kReadbackNames.Name(base.env.readback);
  out.seconds = seconds;
  out.cores =
      static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (int w : workers) {
    EnvPoolOptions o = base;
    o.num_threads = w;
    o.num_envs = w * envs_per_worker;
    o.max_sweep = envs_per_worker;  // a worker's envs, stepped together
    o.faults = FaultPlan{};
    o.on_ready = nullptr;
    for (int e : execute_steps) {
      spdlog::info(
          "bench: env stage alone, {} workers x {} envs, images every {} "
          "steps, {:.0f} s",
          w, envs_per_worker, e, seconds);
      absl::StatusOr<EnvStageFigures> f = MeasureEnvStage(o, seconds, e);
      if (!f.ok()) return f.status();
      out.points.push_back(*f);
    }
  }
  return out;
}

std::string FormatEnvScaling(const EnvScaling& s) {
  std::string t = absl::StrFormat(
      "rl-vla3 bench --env-workers: the env stage alone (zero actions, no "
      "inference or learner), %dx%d, two cameras, env.readback %s, %.0f s "
      "per point, %d cores\n",
      s.width, s.height, s.readback, s.seconds, s.cores);
  absl::StrAppend(&t,
                  "workers  envs  exec  backend  readback   frames/s  "
                  "speed-up  CPU ms/frame  "
                  "wall ms/frame  physics  render  readback  hand-off\n");
  for (const EnvStageFigures& p : s.points) {
    // Speed-up over the first point drawing images as often.
    double first = 0;
    for (const EnvStageFigures& q : s.points) {
      if (q.execute_steps == p.execute_steps) {
        first = q.frames_per_s;
        break;
      }
    }
    absl::StrAppendFormat(
        &t,
        "%7d  %4d  %4d  %-7s  %-9s  %8.0f  %7.2fx  %12.2f  %13.2f  %7.2f  "
        "%6.2f  %8.2f  %8.3f\n",
        p.workers, p.envs, p.execute_steps, p.backend, p.readback,
        p.frames_per_s, first > 0 ? p.frames_per_s / first : 0,
        p.cpu_ms_per_frame, p.wall_ms_per_frame, p.physics_ms, p.render_ms,
        p.readback_ms, p.handoff_ms);
  }
  absl::StrAppend(&t,
                  "(exec: images drawn every this many steps, as a decision of "
                  "rl.execute_steps chunk steps reads them; CPU ms/frame: the "
                  "whole process's CPU time per frame; wall ms/frame: a "
                  "worker's, and its phases)\n");
  return t;
}

std::string EnvScalingJson(const EnvScaling& s) {
  std::vector<std::string> points;
  for (const EnvStageFigures& p : s.points) {
    points.push_back(absl::StrFormat(
        "{\"workers\": %d, \"envs\": %d, \"execute_steps\": %d, "
        "\"backend\": \"%s\", "
        "\"readback\": \"%s\", \"frames_per_s\": %.3f, \"cpu_ms_per_frame\": "
        "%.4f, "
        "\"wall_ms_per_frame\": %.4f, \"physics_ms\": %.4f, "
        "\"render_ms\": %.4f, \"readback_ms\": %.4f, \"handoff_ms\": "
        "%.4f}",
        p.workers, p.envs, p.execute_steps, p.backend, p.readback,
        p.frames_per_s, p.cpu_ms_per_frame, p.wall_ms_per_frame, p.physics_ms,
        p.render_ms, p.readback_ms, p.handoff_ms));
  }
  return absl::StrFormat(
      "{\n  \"width\": %d,\n  \"height\": %d,\n  \"readback\": "
      "\"%s\",\n  \"seconds_per_point\": %.1f,\n  \"cores\": %d,\n  "
      "\"points\": [\n    %s\n  ]\n}\n",
      s.width, s.height, s.readback, s.seconds, s.cores,
      absl::StrJoin(points, ",\n    "));
}

}  // namespace rlvla3
