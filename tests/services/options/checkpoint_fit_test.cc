// A run's config against what a checkpoint records (context.json): the
// recorded values replace keys the config did not give, a given key that
// contradicts the policy's inputs or actions is a config error naming the
// key, given tasks stand for a run and are refused for an eval, and a
// checkpoint without a record changes nothing; the record round-trips and a
// malformed one names its file.
#include "services/options/checkpoint_fit.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "services/options/interface_fit.h"
#include "tests/test_dir.h"

namespace rlvla3 {
namespace {

CheckpointContext Recorded() {
  CheckpointContext c;
  c.image_width = 64;
  c.image_height = 48;
  c.cameras = UndeclaredPolicyCameras();
  c.chunk = 6;
  c.execute_steps = 3;
  c.tasks = {"put_red_cube_on_plate", "stack_green_cube_on_red_cube"};
  c.expert_steps = 33;
  return c;
}

Config Load(const std::vector<std::string>& overrides) {
  absl::StatusOr<Config> c = LoadConfig("", overrides);
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? *c : Config{};
}

TEST(CheckpointContext, RoundTripsAndAMalformedOneNamesItsFile) {
  testutil::TestDir dir;
  ASSERT_TRUE(WriteCheckpointContext(dir.path(), Recorded()).ok());
  absl::StatusOr<std::optional<CheckpointContext>> back =
      ReadCheckpointContext(dir.path());
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_TRUE(back->has_value());
  EXPECT_EQ((*back)->image_width, 64);
  EXPECT_EQ((*back)->image_height, 48);
  EXPECT_EQ((*back)->cameras, UndeclaredPolicyCameras());
  EXPECT_EQ((*back)->chunk, 6);
  EXPECT_EQ((*back)->execute_steps, 3);
  EXPECT_EQ((*back)->tasks, Recorded().tasks);
  EXPECT_EQ((*back)->expert_steps, 33);
  std::ofstream(dir.File("context.json")) << "{\"format\": 3}";
  back = ReadCheckpointContext(dir.path());
  ASSERT_FALSE(back.ok());
  EXPECT_NE(back.status().message().find("context.json"), std::string::npos)
      << back.status();
}

TEST(CheckpointFit, KeysNotGivenTakeTheCheckpointsValues) {
  testutil::TestDir dir;
  ASSERT_TRUE(WriteCheckpointContext(dir.path(), Recorded()).ok());
  Config c = Load({});
  ASSERT_TRUE(FitConfigToCheckpoint(dir.path(), CheckpointUse::kEval, &c).ok());
  EXPECT_EQ(c.env.image_width, 64);
  EXPECT_EQ(c.env.image_height, 48);
  EXPECT_EQ(c.policy.chunk, 6);
  EXPECT_EQ(c.rl.execute_steps, 3);
  EXPECT_EQ(c.sft.tasks, "put_red_cube_on_plate,stack_green_cube_on_red_cube");
  Config init = Load({});
  ASSERT_TRUE(
      FitConfigToCheckpoint(dir.path(), CheckpointUse::kInit, &init).ok());
  EXPECT_EQ(init.env.tasks,
            "put_red_cube_on_plate,stack_green_cube_on_red_cube");
}

TEST(CheckpointFit, AGivenKeyAgainstTheCheckpointIsAConfigErrorNamingIt) {
  testutil::TestDir dir;
  ASSERT_TRUE(WriteCheckpointContext(dir.path(), Recorded()).ok());
  for (const std::string given : {"env.image_width=128", "env.image_height=128",
                                  "policy.chunk=4", "rl.execute_steps=2"}) {
    Config c = Load({given});
    const absl::Status s =
        FitConfigToCheckpoint(dir.path(), CheckpointUse::kEval, &c);
    EXPECT_TRUE(IsConfigError(s)) << given << ": " << s;
    const std::string key = given.substr(0, given.find('='));
    EXPECT_NE(s.message().find(key), std::string::npos) << s;
    EXPECT_NE(s.message().find(dir.path()), std::string::npos) << s;
  }
  // Given and equal to the checkpoint's: nothing to refuse.
  Config same = Load({"env.image_width=64", "rl.execute_steps=3"});
  EXPECT_TRUE(
      FitConfigToCheckpoint(dir.path(), CheckpointUse::kInit, &same).ok());
}

// A key given with --set against the checkpoint is reported as --set, not as
// the config file, which may not hold the key at all (issue 60); a key the
// file gave is reported as the file.
TEST(CheckpointFit, AnErrorNamesWhereTheKeyCameFrom) {
  testutil::TestDir dir;
  ASSERT_TRUE(WriteCheckpointContext(dir.path(), Recorded()).ok());
  const std::string file = dir.File("run.yaml");
  std::ofstream(file) << "env:\n  image_height: 96\n";
  absl::StatusOr<Config> c = LoadConfig(file, {"env.image_width=128"});
  ASSERT_TRUE(c.ok()) << c.status();
  absl::Status s = FitConfigToCheckpoint(dir.path(), CheckpointUse::kEval, &*c);
  ASSERT_TRUE(IsConfigError(s)) << s;
  EXPECT_EQ(s.message().rfind("--set: env.image_width", 0), 0u) << s;
  c = LoadConfig(file, {});
  ASSERT_TRUE(c.ok()) << c.status();
  s = FitConfigToCheckpoint(dir.path(), CheckpointUse::kEval, &*c);
  ASSERT_TRUE(IsConfigError(s)) << s;
  EXPECT_EQ(s.message().rfind(file + ": env.image_height", 0), 0u) << s;
}

// A run from the checkpoint may train on other tasks (fine-tuning on a new
// one); an evaluation measures the tasks the checkpoint was trained on, and a
// tasks key given against them, in the file or with --set, is refused with
// the key and the recorded tasks named (issue 59: a basket checkpoint was
// evaluated on the config's lift task without a word).
TEST(CheckpointFit, GivenTasksStandForARunButAreRefusedForAnEval) {
  testutil::TestDir dir;
  ASSERT_TRUE(WriteCheckpointContext(dir.path(), Recorded()).ok());
  Config c = Load({"env.tasks=put_red_cube_in_basket"});
  ASSERT_TRUE(FitConfigToCheckpoint(dir.path(), CheckpointUse::kInit, &c).ok());
  EXPECT_EQ(c.env.tasks, "put_red_cube_in_basket");
  for (const std::string given :
       {"sft.tasks=lift_the_red_cube", "env.tasks=put_red_cube_in_basket"}) {
    Config eval = Load({given});
    const absl::Status s =
        FitConfigToCheckpoint(dir.path(), CheckpointUse::kEval, &eval);
    EXPECT_TRUE(IsConfigError(s)) << given << ": " << s;
    EXPECT_NE(s.message().find(given.substr(0, given.find('='))),
              std::string::npos)
        << s;
    EXPECT_NE(s.message().find("put_red_cube_on_plate"), std::string::npos)
        << s;
  }
  // Named on purpose (eval --task): neither checked nor replaced.
  Config other = Load({"sft.tasks=lift_the_red_cube"});
  ASSERT_TRUE(
      FitConfigToCheckpoint(dir.path(), CheckpointUse::kEvalOtherTasks, &other)
          .ok());
  EXPECT_EQ(other.sft.tasks, "lift_the_red_cube");
  // Given and equal to the checkpoint's tasks (in any order): evaluated as
  // recorded.
  Config same =
      Load({"sft.tasks=put_red_cube_on_plate, stack_green_cube_on_red_cube"});
  ASSERT_TRUE(
      FitConfigToCheckpoint(dir.path(), CheckpointUse::kEval, &same).ok());
}

TEST(CheckpointFit, ACheckpointWithoutARecordChangesNothing) {
  testutil::TestDir dir;
  Config c = Load({});
  const Config before = c;
  ASSERT_TRUE(FitConfigToCheckpoint(dir.path(), CheckpointUse::kEval, &c).ok());
  EXPECT_EQ(c.env.image_width, before.env.image_width);
  EXPECT_EQ(c.rl.execute_steps, before.rl.execute_steps);
  EXPECT_EQ(c.sft.tasks, before.sft.tasks);
}

// The horizon rule: env.horizon_factor x the demos' median expert length
// the checkpoint records sets the horizon of a run or eval from it; a given
// env.max_episode_steps stands (unless only the file gave it and --set the
// factor), and without the factor (or a record) nothing changes.
TEST(CheckpointFit, TheHorizonRuleScalesTheRecordedExpertLength) {
  testutil::TestDir dir;
  ASSERT_TRUE(WriteCheckpointContext(dir.path(), Recorded()).ok());
  Config ruled = Load({"env.horizon_factor=2.5"});
  ASSERT_TRUE(
      FitConfigToCheckpoint(dir.path(), CheckpointUse::kInit, &ruled).ok());
  EXPECT_EQ(ruled.env.expert_steps, 33);
  EXPECT_EQ(ruled.env.max_episode_steps, 83);  // ceil(2.5 x 33)
  Config given = Load({"env.horizon_factor=2.5", "env.max_episode_steps=120"});
  ASSERT_TRUE(
      FitConfigToCheckpoint(dir.path(), CheckpointUse::kEval, &given).ok());
  EXPECT_EQ(given.env.max_episode_steps, 120);
  // The factor given with --set over a file's horizon: the rule decides
  // (issue 59's held-out runs passed --set env.horizon_factor=3.6 against
  // learning_weak_start.yaml's 120 steps, and ran at 120).
  const std::string file = dir.File("run.yaml");
  std::ofstream(file) << "env:\n  max_episode_steps: 120\n";
  absl::StatusOr<Config> over = LoadConfig(file, {"env.horizon_factor=2.5"});
  ASSERT_TRUE(over.ok()) << over.status();
  ASSERT_TRUE(
      FitConfigToCheckpoint(dir.path(), CheckpointUse::kEval, &*over).ok());
  EXPECT_EQ(over->env.max_episode_steps, 83);
  Config off = Load({});
  ASSERT_TRUE(
      FitConfigToCheckpoint(dir.path(), CheckpointUse::kEval, &off).ok());
  EXPECT_EQ(off.env.max_episode_steps, 0);
  EXPECT_EQ(off.env.expert_steps, 33);  // carried into later checkpoints
  EXPECT_EQ(RlCheckpointContext(off).expert_steps, 33);
}

}  // namespace
}  // namespace rlvla3
