// Declared policies through the whole engine (issue 50, item 2): a
// continuous diagonal-Gaussian chunk (one camera, no proprio) and bins of
// different counts per dimension, one above 256 (so what the policy takes
// travels as float32), each trained by PPO in both modes and GRPO on real
// MuJoCo envs: the segments carry what the policy took in the width its
// head needs, every step trains (none skipped, no sample dropped) and PPO
// moves the weights.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdlib>

#include "policies/action_head.h"
#include "policies/torchscript_policy.h"
#include "services/engine/local_engine.h"
#include "services/options/engine_config.h"
#include "services/options/interface_fit.h"
#include "tests/test_dir.h"

namespace rlvla3 {
namespace {

constexpr char kGaussian[] =
    R"({"format": "rl-vla3/interface/v1",
        "cameras": [{"name": "agentview", "height": 32, "width": 32}],
        "proprio": 0,
        "action": {"kind": "gaussian", "size": 7, "low": -1, "high": 1},
        "chunk": 2})";

constexpr char kWideBins[] =
    R"({"format": "rl-vla3/interface/v1",
        "cameras": [{"name": "wrist", "height": 32, "width": 32},
                    {"name": "agentview", "height": 32, "width": 32}],
        "proprio": 8,
        "action": {"kind": "bins", "size": 7,
                   "bins": [512, 64, 64, 32, 32, 32, 2],
                   "low": [-0.5, -1, -1, -1, -1, -1, -1], "high": 1},
        "chunk": 2})";

Config SmallConfig(const std::string& mode, const std::string& algorithm,
                   const std::string& policy) {
  absl::StatusOr<Config> c = LoadConfig(
      "", {"run.mode=" + mode, "rl.algorithm=" + algorithm, "env.num_envs=4",
           "env.image_width=32", "env.image_height=32", "rl.rollout_len=4",
           "rl.micro_batch=8", "rl.duration_s=120", "rl.max_steps=2",
           "rl.execute_steps=2", "policy.chunk=2", "metrics.interval_s=0.5",
           "threads.env_workers=2", "env.tasks=lift_the_red_cube",
           "env.max_episode_steps=12", "rl.grpo_group_size=2",
           "policy.kind=torchscript", "policy.path=" + policy});
  EXPECT_TRUE(c.ok()) << c.status();
  if (!c.ok()) return Config{};
  // As the CLI does: the declaration's cameras (and sizes) bind the run.
  EXPECT_TRUE(FitConfigToPolicy(&*c).ok());
  return *c;
}

std::string Export(const testutil::TestDir& dir, const std::string& name,
                   const std::string& declaration) {
  const std::string out = dir.File(name);
  const std::string cmd = std::string(RLVLA3_PYTHON) + " " + RLVLA3_SOURCE_DIR +
                          "/scripts/export_torchscript_policy.py " + out +
                          " --declare '" + declaration + "' > /dev/null";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  return out;
}

// Two optimizer steps of `c`'s run: they train and (PPO: the critic's
// baseline makes advantages nonzero) move the weights. A GRPO group whose
// episodes all fail has zero advantages, so GRPO's weights may stay.
void TrainsTwoSteps(const Config& c) {
  absl::StatusOr<EngineParts> parts = BuildEngineParts(c);
  ASSERT_TRUE(parts.ok()) << parts.status();
  std::vector<at::Tensor> before;
  for (const at::Tensor& p : parts->policy->Parameters().weights)
    before.push_back(p.detach().clone());
  absl::StatusOr<LocalEngineOptions> o =
      LocalEngineOptionsFromConfig(c, *parts);
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->segment_shape.taken_bytes,
            TakenBytes(parts->policy->declared_interface()->action));
  absl::StatusOr<std::unique_ptr<LocalEngine>> e =
      LocalEngine::Create(*o, *parts);
  ASSERT_TRUE(e.ok()) << e.status();
  const absl::Status run = (*e)->Run({});
  ASSERT_TRUE(run.ok()) << run;
  const EngineSummary s = (*e)->Summary();
  EXPECT_GE(s.optimizer_steps, 2);
  EXPECT_EQ(s.skipped_steps, 0);
  // None arrived stale; some may wait past the bound at the learner.
  EXPECT_EQ(s.dropped_samples - s.aged_out_samples, 0);
  const std::vector<at::Tensor> after = (*e)->policy().Parameters().weights;
  bool moved = false;
  for (size_t i = 0; i < after.size(); ++i)
    moved |= !torch::equal(after[i].detach(), before[i]);
  if (c.rl.algorithm == "ppo") {
    EXPECT_TRUE(moved) << "two optimizer steps left every weight unchanged";
  }
}

TEST(DeclaredEngine, AGaussianChunkTrainsInBothModesAndWithGrpo) {
  if (std::string(RLVLA3_PYTHON).empty()) GTEST_SKIP() << "no python3 torch";
  const testutil::TestDir dir;
  const std::string pt = Export(dir, "gaussian.pt", kGaussian);
  for (const auto& [mode, algorithm] :
       {std::pair<const char*, const char*>{"async", "ppo"},
        {"sync", "ppo"},
        {"async", "grpo"}}) {
    SCOPED_TRACE(std::string(mode) + " " + algorithm);
    TrainsTwoSteps(SmallConfig(mode, algorithm, pt));
  }
}

// A run whose env.cameras are not the declared ones (a config not fitted
// to the policy) is refused naming the key, before any env starts.
TEST(DeclaredEngine, CamerasOtherThanDeclaredAreAConfigError) {
  if (std::string(RLVLA3_PYTHON).empty()) GTEST_SKIP() << "no python3 torch";
  const testutil::TestDir dir;
  const std::string pt = Export(dir, "gaussian.pt", kGaussian);
  Config c = SmallConfig("async", "ppo", pt);
  c.env.cameras = "agentview,wrist";
  absl::StatusOr<EngineParts> parts = BuildEngineParts(c);
  ASSERT_TRUE(parts.ok()) << parts.status();
  const absl::StatusOr<LocalEngineOptions> o =
      LocalEngineOptionsFromConfig(c, *parts);
  ASSERT_FALSE(o.ok());
  EXPECT_TRUE(IsConfigError(o.status())) << o.status();
  EXPECT_NE(std::string(o.status().message())
                .find("env.cameras = \"agentview,wrist\": expected agentview, "
                      "the cameras the policy declares"),
            std::string::npos)
      << o.status();
}

TEST(DeclaredEngine, BinsAbove256TravelAsFloatAndTrain) {
  if (std::string(RLVLA3_PYTHON).empty()) GTEST_SKIP() << "no python3 torch";
  const testutil::TestDir dir;
  const std::string pt = Export(dir, "bins.pt", kWideBins);
  TrainsTwoSteps(SmallConfig("async", "ppo", pt));
}

}  // namespace
}  // namespace rlvla3
