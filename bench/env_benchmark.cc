// Env benchmarks on this machine: physics steps/s and control steps/s (with
// both cameras rendered) per core, env-pool scaling from 1 to 2 worker
// threads, and memory per env.
//
//   build/bench/env_benchmark --benchmark_counters_tabular=true
//
// BM_PhysicsStep: one mj_step of a task scene (500 Hz physics).
// BM_ControlStep/render:R: one env control step (25 physics steps + IK, and
//   with R=1 the agentview and wrist cameras at 128x128) on one thread.
// BM_EnvPool/threads:T: 8 envs on T worker threads, random actions, the
//   caller sends every ready env at once; counters: env frames/s, MB per env.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <fstream>
#include <random>

#include "envs/egl_context.h"
#include "envs/env_pool.h"
#include "envs/manipulation_env.h"

namespace rlvla3 {
namespace {

constexpr const char* kTask = "put_red_cube_in_basket";
constexpr int kPoolEnvs = 8;

double RssMb() {
  std::ifstream in("/proc/self/statm");
  long pages = 0, resident = 0;
  in >> pages >> resident;
  return static_cast<double>(resident) *
         static_cast<double>(sysconf(_SC_PAGESIZE)) / 1e6;
}

void BM_PhysicsStep(benchmark::State& state) {
  EnvOptions o;
  o.render = false;
  auto task = TaskModel::Create(*FindTask(kTask), o);
  auto env = ManipulationEnv::Create(*task, o, 0, 0);
  const mjModel* m = (*env)->model();
  mjData* d = (*env)->data();
  for (auto _ : state) {
    (*task)->controller().Compensate(m, d);
    mj_step(m, d);
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["physics_steps_per_s"] = benchmark::Counter(
      static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

void BM_ControlStep(benchmark::State& state) {
  const bool render = state.range(0) != 0;
  ConfigureSoftwareRasterizer(0);
  std::unique_ptr<EglContext> gl;
  if (render) {
    auto c = EglContext::Create();
    if (!c.ok()) {
      state.SkipWithError(std::string(c.status().message()).c_str());
      return;
    }
    gl = *std::move(c);
  }
  EnvOptions o;
  o.render = render;
  auto task = TaskModel::Create(*FindTask(kTask), o);
  auto env = ManipulationEnv::Create(*task, o, 0, 0);
  std::mt19937 rng(0);
  std::uniform_real_distribution<float> u(-1, 1);
  float a[kActionDim];
  for (auto _ : state) {
    for (float& x : a) x = u(rng);
    auto r = (*env)->Step(a);
    if (r->done || r->truncated) (*env)->Reset();
  }
  state.counters["control_steps_per_s"] = benchmark::Counter(
      static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

void BM_EnvPool(benchmark::State& state) {
  EnvPoolOptions o;
  o.tasks = {*FindTask(kTask)};
  o.num_envs = kPoolEnvs;
  o.num_threads = static_cast<int>(state.range(0));
  const double rss0 = RssMb();
  auto pool = EnvPool::Create(o);
  if (!pool.ok()) {
    state.SkipWithError(std::string(pool.status().message()).c_str());
    return;
  }
  const double mb_per_env = (RssMb() - rss0) / kPoolEnvs;
  std::vector<int> ready;
  std::vector<float> actions;
  std::mt19937 rng(0);
  std::uniform_real_distribution<float> u(-1, 1);
  int64_t frames = 0;
  for (auto _ : state) {
    ready.clear();
    (*pool)->Recv(1, absl::Seconds(10), &ready).IgnoreError();
    actions.resize(ready.size() * kActionDim);
    for (float& x : actions) x = u(rng);
    (*pool)->Send(ready, actions).IgnoreError();
    frames += static_cast<int64_t>(ready.size());
  }
  state.counters["env_frames_per_s"] = benchmark::Counter(
      static_cast<double>(frames), benchmark::Counter::kIsRate);
  state.counters["mb_per_env"] = mb_per_env;
}

BENCHMARK(BM_PhysicsStep)->MinTime(2.0);
BENCHMARK(BM_ControlStep)
    ->ArgName("render")
    ->Arg(0)
    ->Arg(1)
    ->MinTime(3.0)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_EnvPool)
    ->ArgName("threads")
    ->Arg(1)
    ->Arg(2)
    ->MinTime(4.0)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace rlvla3
