#include "envs/manipulation_env.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace rlvla3 {
namespace {

std::unique_ptr<ManipulationEnv> MakeEnv(const std::string& task,
                                         int env_id = 0) {
  EnvOptions o;
  o.render = false;
  auto model = TaskModel::Create(*FindTask(task), o);
  EXPECT_TRUE(model.ok()) << model.status();
  auto env = ManipulationEnv::Create(*model, o, /*seed=*/7, env_id);
  EXPECT_TRUE(env.ok()) << env.status();
  return *std::move(env);
}

std::vector<double> Qpos(const ManipulationEnv& env) {
  return std::vector<double>(env.data()->qpos,
                             env.data()->qpos + env.model()->nq);
}

TEST(ManipulationEnv, RejectsBadActionsWithoutStepping) {
  auto env = MakeEnv("lift_the_red_cube", 5);
  const std::vector<double> before = Qpos(*env);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> a(kActionDim, 0.0f);
  a[2] = nan;
  absl::StatusOr<StepResult> r = env->Step(a);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "env 5: action[2] is nan");
  std::vector<float> short_action(3, 0.0f);
  r = env->Step(short_action);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "env 5: action has 3 values, expected 7");
  a[2] = std::numeric_limits<float>::infinity();
  EXPECT_FALSE(env->Step(a).ok());
  EXPECT_EQ(Qpos(*env), before);
  EXPECT_EQ(env->step_count(), 0);
}

TEST(ManipulationEnv, UnstablePhysicsTruncatesTheEpisode) {
  auto env = MakeEnv("lift_the_red_cube");
  env->data()->qvel[0] = std::numeric_limits<double>::quiet_NaN();
  std::vector<float> a(kActionDim, 0.0f);
  absl::StatusOr<StepResult> r = env->Step(a);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->truncated);
  EXPECT_TRUE(r->unstable);
  EXPECT_FALSE(r->success);
  env->Reset();
  r = env->Step(a);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->unstable);
}

TEST(ManipulationEnv, ObservationProprioAndTimeLimit) {
  auto env = MakeEnv("open_the_drawer");
  const Observation& obs = env->observation();
  EXPECT_EQ(*obs.instruction, "open the drawer");
  // Home pose: eef above the table, fingers open.
  EXPECT_NEAR(obs.proprio[2], 0.25, 0.02);
  EXPECT_NEAR(obs.proprio[6], 0.04, 0.005);
  std::vector<float> a(kActionDim, 0.0f);
  a[6] = 1.0f;  // close the gripper
  StepResult last;
  for (int i = 0; i < env->task().task().max_steps; ++i) {
    absl::StatusOr<StepResult> r = env->Step(a);
    ASSERT_TRUE(r.ok());
    last = *r;
    if (r->truncated) break;
  }
  EXPECT_TRUE(last.truncated);
  EXPECT_EQ(env->step_count(), env->task().task().max_steps);
  EXPECT_LT(env->observation().proprio[6], 0.01);  // fingers closed
}

TEST(ManipulationEnv, ResetIsDeterministicPerSeedAndEnvId) {
  auto a = MakeEnv("put_blue_cube_in_bowl", 3);
  auto b = MakeEnv("put_blue_cube_in_bowl", 3);
  auto c = MakeEnv("put_blue_cube_in_bowl", 4);
  EXPECT_EQ(a->init_id(), b->init_id());
  EXPECT_EQ(Qpos(*a), Qpos(*b));
  for (int k = 0; k < 5; ++k) {
    a->Reset();
    b->Reset();
    EXPECT_EQ(a->init_id(), b->init_id());
  }
  (void)c;
}

TEST(TaskModel, InvalidSceneNamesMujocosErrorAndFile) {
  // A task whose goal names a body the scene lacks fails with a clear error.
  TaskSpec t = *FindTask("lift_the_red_cube");
  t.goal[0].a = "purple_cube";
  EnvOptions o;
  o.render = false;
  auto m = TaskModel::Create(t, o);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().message(), "goal names unknown body purple_cube");
}

}  // namespace
}  // namespace rlvla3
