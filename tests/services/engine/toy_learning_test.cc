// RL end to end on the toy env (configs/toy_reach.yaml): the engine learns
// toy_reach from scratch to >= 95% sampled success over its last 200
// episodes, in sync and in async mode, within the config's two minutes.
// Every stage is the product's (env pool, inference server, learner, weight
// publication); only the env is a few lines of state instead of MuJoCo.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "runtime/config.h"
#include "services/engine/local_engine.h"
#include "services/options/engine_config.h"

namespace rlvla3 {
namespace {

constexpr int kWindow = 200;
constexpr double kTarget = 0.95;

// Success over the last kWindow finished episodes (0 before there are that
// many).
double RecentSuccess(const std::vector<EpisodeRecord>& eps) {
  if (static_cast<int>(eps.size()) < kWindow) return 0;
  int ok = 0;
  for (size_t i = eps.size() - kWindow; i < eps.size(); ++i)
    ok += eps[i].success;
  return static_cast<double>(ok) / kWindow;
}

void LearnsToyReach(const std::string& mode) {
  absl::StatusOr<Config> c =
      LoadConfig(RLVLA3_SOURCE_DIR "/configs/toy_reach.yaml",
                 {"run.mode=" + mode, "metrics.progress=off"});
  ASSERT_TRUE(c.ok()) << c.status();
  absl::StatusOr<EngineParts> parts = BuildEngineParts(*c);
  ASSERT_TRUE(parts.ok()) << parts.status();
  absl::StatusOr<LocalEngineOptions> o =
      LocalEngineOptionsFromConfig(*c, *parts);
  ASSERT_TRUE(o.ok()) << o.status();
  absl::StatusOr<std::unique_ptr<LocalEngine>> e =
      LocalEngine::Create(*o, *parts);
  ASSERT_TRUE(e.ok()) << e.status();
  LocalEngine* engine = e->get();
  double first = -1, reached = 0;
  const auto start = std::chrono::steady_clock::now();
  EngineHooks hooks;
  hooks.should_stop = [&] {
    const double s = RecentSuccess(engine->Episodes());
    if (first < 0 && s > 0) first = s;
    reached = s;
    return s >= kTarget;
  };
  ASSERT_TRUE(engine->Run(hooks).ok());
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  std::printf(
      "toy_reach %s: success over the last %d episodes %.0f%% -> "
      "%.0f%% in %.0f s, %zu episodes\n",
      mode.c_str(), kWindow, 100 * first, 100 * reached, wall,
      engine->Episodes().size());
  EXPECT_LT(first, 0.6) << "the toy is not learned at the start";
  EXPECT_GE(reached, kTarget)
      << mode << " did not learn toy_reach in " << c->rl.duration_s << " s";
}

TEST(ToyLearning, AsyncLearnsToyReachFromScratch) { LearnsToyReach("async"); }
TEST(ToyLearning, SyncLearnsToyReachFromScratch) { LearnsToyReach("sync"); }

}  // namespace
}  // namespace rlvla3
