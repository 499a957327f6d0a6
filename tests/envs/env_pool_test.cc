// The env pool with rendering (EGL on Mesa llvmpipe here, NVIDIA EGL on GPUs).
#include "envs/env_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <limits>
#include <map>
#include <mutex>
#include <random>

#include "tests/envs/images_near.h"

namespace rlvla3 {
namespace {

constexpr int kEnvs = 4;
constexpr int kSteps = 12;

EnvPoolOptions Options(int threads) {
  EnvPoolOptions o;
  o.tasks = {*FindTask("put_red_cube_on_plate"), *FindTask("open_the_drawer")};
  o.num_envs = kEnvs;
  o.num_threads = threads;
  o.seed = 11;
  o.env.image_width = 64;
  o.env.image_height = 64;
  return o;
}

uint64_t Hash(const EnvState& s) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  };
  mix(s.obs->images.data(), s.obs->images.size());
  mix(s.obs->proprio, sizeof(s.obs->proprio));
  return h;
}

// Steps every env kSteps times with actions that depend only on (env, step);
// returns each env's observation hashes in step order.
using Images = std::map<int, std::vector<std::vector<uint8_t>>>;

// `images` (if given) gets each observation's two images, concatenated.
// `execute_steps` E > 1: each env's images are drawn on every E-th step only
// (SkipImagesOnNextStep, as the rollout worker's decisions).
std::map<int, std::vector<uint64_t>> RunPool(int threads,
                                             bool batch_readback = false,
                                             Images* images = nullptr,
                                             int max_sweep = 1,
                                             int execute_steps = 1) {
  EnvPoolOptions o = Options(threads);
  o.env.readback = batch_readback ? Readback::kBatched : Readback::kPerImage;
  o.max_sweep = max_sweep;
  auto pool = EnvPool::Create(o);
  EXPECT_TRUE(pool.ok()) << pool.status();
  std::map<int, std::vector<uint64_t>> hashes;
  std::map<int, int> steps;
  int remaining = kEnvs;
  std::vector<int> ready;
  while (remaining > 0) {
    ready.clear();
    absl::Status s = (*pool)->Recv(1, absl::Seconds(30), &ready);
    EXPECT_TRUE(s.ok()) << s;
    if (!s.ok()) break;
    std::vector<int> send;
    std::vector<float> actions;
    for (int id : ready) {
      hashes[id].push_back(Hash((*pool)->state(id)));
      if (images != nullptr) {
        const Observation& obs = *(*pool)->state(id).obs;
        (*images)[id].push_back(obs.images);
      }
      if (steps[id]++ == kSteps) {
        --remaining;
        continue;
      }
      if (steps[id] % execute_steps != 0) (*pool)->SkipImagesOnNextStep(id);
      std::mt19937 rng(1000 * id + steps[id]);
      std::uniform_real_distribution<float> u(-1, 1);
      send.push_back(id);
      for (int k = 0; k < kActionDim; ++k) actions.push_back(u(rng));
    }
    if (!send.empty()) EXPECT_TRUE((*pool)->Send(send, actions).ok());
  }
  return hashes;
}

TEST(EnvPool, SingleAndMultiThreadedRunsAreBitwiseIdentical) {
  const auto one = RunPool(1);
  const auto two = RunPool(2);
  ASSERT_EQ(one.size(), size_t(kEnvs));
  for (int id = 0; id < kEnvs; ++id) {
    ASSERT_EQ(one.at(id).size(), size_t(kSteps + 1));
    EXPECT_EQ(one.at(id), two.at(id)) << "env " << id;
  }
  // Different envs really differ (seed + env_id).
  EXPECT_NE(one.at(0), one.at(2));
}

// Each env's images of every step, batched vs one readback per image.
void CompareImages(const Images& each, const Images& batched, int threads) {
  ASSERT_EQ(each.size(), size_t(kEnvs));
  for (int id = 0; id < kEnvs; ++id) {
    ASSERT_EQ(each.at(id).size(), size_t(kSteps + 1));
    ASSERT_EQ(batched.at(id).size(), size_t(kSteps + 1));
    for (int t = 0; t <= kSteps; ++t) {
      const std::vector<uint8_t>& a = each.at(id)[t];
      const std::vector<uint8_t>& b = batched.at(id)[t];
      EXPECT_TRUE(testutil::ImagesNear(a, b))
          << threads << " workers, env " << id << " step " << t;
    }
  }
}

// Batched readback (each worker's images drawn into tiles of one buffer and
// read back once per sweep) gives the images of one readback per image, up
// to the rasteriser's sub-pixel position: a tile away from the buffer's
// origin may move a few edge pixels by a level or two (at most 0.25% of the
// bytes here). Stale images (announced before the sweep's readback) or a
// tile read from the wrong place differ in 35-50% of them. Sweeps of up to
// every env of a worker, on one and two workers.
TEST(EnvPool, BatchedReadbackGivesTheSameImagesAsOneReadbackPerImage) {
  Images each;
  RunPool(1, /*batch_readback=*/false, &each);
  for (int threads : {1, 2}) {
    Images batched;
    RunPool(threads, /*batch_readback=*/true, &batched, kEnvs);
    CompareImages(each, batched, threads);
  }
}

// A decision reads the images after its last executed chunk step only: the
// steps before it are not drawn (their images are the last drawn frame), and
// the images a decision reads are bit-identical to drawing every step. On
// one worker (one readback per image) and two (batched, sweeps of 4).
TEST(EnvPool, DrawsOnlyTheImagesADecisionReadsAndThoseExactly) {
  constexpr int kExecute = 4;
  Images every;
  RunPool(1, /*batch_readback=*/false, &every);
  for (const auto& [threads, batched] : {std::pair{1, false}, {2, true}}) {
    Images decisions;
    RunPool(threads, batched, &decisions, batched ? kEnvs : 1, kExecute);
    for (int id = 0; id < kEnvs; ++id) {
      ASSERT_EQ(decisions.at(id).size(), size_t(kSteps + 1));
      for (int t = 0; t <= kSteps; ++t) {
        const int drawn = t - t % kExecute;  // the last frame drawn
        const std::vector<uint8_t>& want = every.at(id)[drawn];
        const std::vector<uint8_t>& got = decisions.at(id)[t];
        if (batched) {
          EXPECT_TRUE(testutil::ImagesNear(want, got))
              << "env " << id << " step " << t;
        } else {
          EXPECT_EQ(want, got) << "env " << id << " step " << t;
        }
      }
      // Not drawn: a frame between decisions is not today's scene.
      EXPECT_NE(every.at(id)[1], decisions.at(id)[1]) << "env " << id;
    }
  }
}

TEST(EnvPool, RendersNonTrivialImages) {
  auto pool = EnvPool::Create(Options(1));
  ASSERT_TRUE(pool.ok()) << pool.status();
  std::vector<int> ready;
  ASSERT_TRUE((*pool)->Recv(kEnvs, absl::Seconds(30), &ready).ok());
  const Observation& obs = *(*pool)->state(0).obs;
  int distinct = 0;
  std::vector<bool> seen(256, false);
  const size_t agentview = obs.images.size() / 2;  // camera 0 of two
  for (size_t i = 0; i < agentview; i += 3) {
    if (!seen[obs.images[i]]) ++distinct, seen[obs.images[i]] = true;
  }
  EXPECT_GT(distinct, 20);  // a real scene, not a blank buffer
}

TEST(EnvPool, BadActionsAreRejectedAndCountedNotStepped) {
  auto pool = EnvPool::Create(Options(2));
  ASSERT_TRUE(pool.ok());
  std::vector<int> ready;
  ASSERT_TRUE((*pool)->Recv(kEnvs, absl::Seconds(30), &ready).ok());
  std::vector<float> a(kActionDim, 0.0f);
  a[0] = std::numeric_limits<float>::quiet_NaN();
  const uint64_t before = Hash((*pool)->state(1));
  ASSERT_TRUE((*pool)->Send({1}, a).ok());
  ready.clear();
  ASSERT_TRUE((*pool)->Recv(1, absl::Seconds(30), &ready).ok());
  const EnvState& s = (*pool)->state(1);
  EXPECT_EQ(s.error.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.error.message(), "env 1: action[0] is nan");
  EXPECT_EQ(s.step, 0);
  EXPECT_EQ(Hash(s), before);
  EXPECT_EQ((*pool)->stats().invalid_actions, 1u);
  // API misuse is an error, not a crash.
  EXPECT_FALSE((*pool)->Send({kEnvs}, std::vector<float>(kActionDim)).ok());
  EXPECT_FALSE((*pool)->Send({0}, std::vector<float>(3)).ok());
}

// Each injected fault ends its env's episode at exactly its step, with the
// reason; the env resets on its next Send and steps on; other envs never see
// a fault; every one is counted.
TEST(EnvPool, FaultsEndTheEpisodeResetTheEnvAndAreCounted) {
  EnvPoolOptions o = Options(2);
  o.first_env_id = 10;  // plans name global env ids
  absl::StatusOr<FaultPlan> plan =
      ParseFaultPlan("throw@10:2, wrong_shape@10:4, nan@11:3, hang@13:2");
  ASSERT_TRUE(plan.ok()) << plan.status();
  o.faults = *plan;
  o.faults.hang_s = 0.6;
  o.step_deadline_s = 0.3;
  auto pool = EnvPool::Create(o);
  ASSERT_TRUE(pool.ok()) << pool.status();
  std::map<int, int> stepped;  // steps sent to each env (resets excluded)
  std::map<std::pair<int, int>, std::string> faults;  // (env, step) -> reason
  std::vector<int> ready;
  ASSERT_TRUE((*pool)->Recv(kEnvs, absl::Seconds(30), &ready).ok());
  auto all_stepped = [&] {
    for (int id = 0; id < kEnvs; ++id) {
      if (stepped[id] < 6) return false;
    }
    return true;
  };
  while (!all_stepped()) {
    std::vector<float> actions(ready.size() * kActionDim, 0.1f);
    for (int id : ready) {
      const EnvState& st = (*pool)->state(id);
      if (!st.fault.ok()) {
        EXPECT_TRUE(st.result.truncated);
        faults[{id, stepped[id]}] = std::string(st.fault.message());
      }
    }
    // An env whose last state ended its episode resets on this Send.
    for (int id : ready) {
      const StepResult& r = (*pool)->state(id).result;
      if (!r.done && !r.truncated) ++stepped[id];
    }
    ASSERT_TRUE((*pool)->Send(ready, actions).ok());
    ready.clear();
    ASSERT_TRUE((*pool)->Recv(1, absl::Seconds(30), &ready).ok());
  }
  ASSERT_EQ(faults.size(), 4u);
  EXPECT_NE(
      faults[std::make_pair(0, 2)].find("the env crashed: injected fault"),
      std::string::npos);
  EXPECT_NE(
      faults[std::make_pair(0, 4)].find(
          "observation images: 12288 bytes, expected 24576 ([2, 64, 64, 3])"),
      std::string::npos)
      << faults[std::make_pair(0, 4)];
  EXPECT_NE(faults[std::make_pair(1, 3)].find("observation.proprio[0] is nan"),
            std::string::npos);
  EXPECT_NE(
      faults[std::make_pair(3, 2)].find("past env.step_deadline_s 0.30 s"),
      std::string::npos);
  EXPECT_EQ((*pool)->stats().faults, 4u);
}

TEST(EnvPool, AutoResetAfterTheLastStepOfAnEpisode) {
  EnvPoolOptions o = Options(1);
  o.num_envs = 1;
  o.tasks = {*FindTask("lift_the_red_cube")};
  o.env.render = false;
  auto pool = EnvPool::Create(o);
  ASSERT_TRUE(pool.ok());
  std::vector<int> ready;
  ASSERT_TRUE((*pool)->Recv(1, absl::Seconds(10), &ready).ok());
  const std::vector<float> idle(kActionDim, 0.0f);
  const int limit = FindTask("lift_the_red_cube")->max_steps;
  for (int i = 0; i < limit; ++i) {
    ASSERT_TRUE((*pool)->Send({0}, idle).ok());
    ready.clear();
    ASSERT_TRUE((*pool)->Recv(1, absl::Seconds(10), &ready).ok());
  }
  EXPECT_TRUE((*pool)->state(0).result.truncated);
  const uint64_t episode = (*pool)->state(0).episode_id;
  ASSERT_TRUE((*pool)->Send({0}, idle).ok());  // ignored: resets instead
  ready.clear();
  ASSERT_TRUE((*pool)->Recv(1, absl::Seconds(10), &ready).ok());
  EXPECT_EQ((*pool)->state(0).step, 0);
  EXPECT_EQ((*pool)->state(0).episode_id, episode + 1);
  const EnvPoolStats st = (*pool)->stats();
  EXPECT_EQ(st.truncations, 1u);
  EXPECT_EQ(st.resets, 1u);
  EXPECT_EQ(st.steps, uint64_t(limit));
}

TEST(EnvPool, LatencyModelDelaysButDoesNotChangeResults) {
  EnvPoolOptions o = Options(1);
  o.env.render = false;
  o.latency.mean_ms = 5;
  o.latency.cv = 0.5;
  auto pool = EnvPool::Create(o);
  ASSERT_TRUE(pool.ok());
  EXPECT_EQ(o.latency.Describe(), "lognormal, mean 5.0 ms, cv 0.50");
  std::vector<int> ready;
  ASSERT_TRUE((*pool)->Recv(kEnvs, absl::Seconds(10), &ready).ok());
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE((*pool)->Send({0}, std::vector<float>(kActionDim, 0.0f)).ok());
  ready.clear();
  ASSERT_TRUE((*pool)->Recv(1, absl::Seconds(10), &ready).ok());
  EXPECT_EQ(ready, std::vector<int>{0});
  EXPECT_GT(std::chrono::steady_clock::now() - t0,
            std::chrono::microseconds(500));
  EXPECT_EQ((*pool)->state(0).step, 1);
}

// A sweep: the worker steps every queued env (up to max_sweep) before it
// announces any of them, so their states reach the consumer together; with
// max_sweep 1 the first env is announced while the others still wait. Envs
// 1..3 are queued from env 0's announcement, on the worker itself, so they
// are all queued before the worker looks again. Returns how many of them
// were announced before the last of their steps ended.
int64_t AnnouncedBeforeTheLastStepEnded(int max_sweep) {
  EnvPoolOptions o = Options(1);
  o.max_sweep = max_sweep;
  std::mutex mu;
  std::condition_variable cv;
  std::vector<int64_t> announced_ns;  // steady clock, envs 1..3
  EnvPool* pool_ptr = nullptr;
  const std::vector<int> rest = {1, 2, 3};
  const std::vector<float> actions(rest.size() * kActionDim, 0.1f);
  o.on_ready = [&](int id) {
    if (id == 0) {
      EXPECT_TRUE(pool_ptr->Send(rest, actions).ok());
      return;
    }
    std::lock_guard<std::mutex> lock(mu);
    announced_ns.push_back(
        std::chrono::steady_clock::now().time_since_epoch().count());
    cv.notify_all();
  };
  auto pool = EnvPool::Create(o);
  EXPECT_TRUE(pool.ok()) << pool.status();
  if (!pool.ok()) return -1;
  pool_ptr = pool->get();
  const int first = 0;
  EXPECT_TRUE((*pool)
                  ->Send(absl::MakeConstSpan(&first, 1),
                         absl::MakeConstSpan(actions.data(), kActionDim))
                  .ok());
  std::unique_lock<std::mutex> lock(mu);
  EXPECT_TRUE(cv.wait_for(lock, std::chrono::seconds(30),
                          [&] { return announced_ns.size() == rest.size(); }));
  int64_t last_step_end = 0;
  for (int id : rest)
    last_step_end = std::max(last_step_end, (*pool)->state(id).step_end_ns);
  int64_t early = 0;
  for (int64_t t : announced_ns) early += t < last_step_end ? 1 : 0;
  return early;
}

TEST(EnvPool, ASweepAnnouncesItsEnvsTogether) {
  EXPECT_EQ(AnnouncedBeforeTheLastStepEnded(kEnvs), 0);
  EXPECT_GT(AnnouncedBeforeTheLastStepEnded(1), 0);
}

TEST(EnvPool, EachFramesPhasesAreTimedAndFitInItsStep) {
  for (const bool render : {true, false}) {
    EnvPoolOptions o = Options(2);
    o.env.render = render;
    auto pool = EnvPool::Create(o);
    ASSERT_TRUE(pool.ok()) << pool.status();
    std::vector<int> ready;
    std::vector<float> zeros;
    for (int round = 0; round < 3; ++round) {
      ready.clear();
      ASSERT_TRUE((*pool)->Recv(kEnvs, absl::Seconds(30), &ready).ok());
      for (int id : ready) {
        const EnvState& st = (*pool)->state(id);
        const StepPhases& p = st.phases;
        EXPECT_GT(p.physics_ms, 0) << "env " << id;
        EXPECT_EQ(p.render_ms > 0, render) << "env " << id;
        EXPECT_EQ(p.readback_ms > 0, render) << "env " << id;
        if (round > 0) {  // a step (round 0 is the pool's initial reset)
          EXPECT_LE(p.physics_ms + p.render_ms + p.readback_ms,
                    st.step_ms + 1e-3)
              << "env " << id;
        }
      }
      zeros.assign(ready.size() * kActionDim, 0.0f);
      ASSERT_TRUE((*pool)->Send(ready, zeros).ok());
    }
    const EnvPoolStats s = (*pool)->stats();
    EXPECT_GT(s.phases.physics_ms, 0);
    EXPECT_EQ(s.phases.render_ms > 0, render);
    EXPECT_GE(s.handoff_ms, 0);
    EXPECT_LE(s.phases.physics_ms + s.phases.render_ms + s.phases.readback_ms,
              s.step_ms.mean() + 1e-3);
  }
}

TEST(RenderBackend, MesaRendersHereAndAGpuBackendSaysWhenThereIsNone) {
  EXPECT_EQ(kRenderBackendNames.Parse("mesa"), RenderBackend::kMesa);
  EXPECT_EQ(kRenderBackendNames.Parse("gpu"), RenderBackend::kGpu);
  EXPECT_EQ(kRenderBackendNames.Parse("auto"), RenderBackend::kAuto);
  EXPECT_FALSE(kRenderBackendNames.Parse("osmesa").has_value());
  // auto: the GPU's device for a process rendering on few threads only.
  EXPECT_EQ(
      ResolveRenderBackend(RenderBackend::kAuto, kMaxGpuRenderThreads + 1),
      RenderBackend::kMesa);
  EXPECT_EQ(ResolveRenderBackend(RenderBackend::kAuto, 1),
            HasGpuEglDevice() ? RenderBackend::kGpu : RenderBackend::kMesa);
  EXPECT_EQ(ResolveRenderBackend(RenderBackend::kGpu, 8), RenderBackend::kGpu);

  EnvPoolOptions o = Options(1);
  o.env.render_backend = RenderBackend::kMesa;
  auto pool = EnvPool::Create(o);
  ASSERT_TRUE(pool.ok()) << pool.status();
  std::vector<int> ready;
  ASSERT_TRUE((*pool)->Recv(kEnvs, absl::Seconds(30), &ready).ok());
  const Observation& obs = *(*pool)->state(ready.front()).obs;
  EXPECT_NE(std::count(obs.images.begin(), obs.images.end(), 0),
            static_cast<long>(obs.images.size()))
      << "a blank image";
  if (HasGpuEglDevice()) return;
  o.env.render_backend = RenderBackend::kGpu;
  auto none = EnvPool::Create(o);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("no GPU EGL device"),
            std::string::npos)
      << none.status();
}

TEST(EnvPool, NoTasksIsAnError) {
  EnvPoolOptions o = Options(1);
  o.tasks.clear();
  auto pool = EnvPool::Create(o);
  ASSERT_FALSE(pool.ok());
  EXPECT_EQ(pool.status().message(), "env pool: no tasks");
}

}  // namespace
}  // namespace rlvla3
