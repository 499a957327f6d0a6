// Every task's goal is false at all of its initial states and true once its
// scripted expert reports success; the experts solve the tasks.
#include <gtest/gtest.h>

#include "envs/manipulation_env.h"
#include "envs/scripted_expert.h"

namespace rlvla3 {
namespace {

constexpr int kExpertEpisodes = 10;

EnvOptions PhysicsOnly() {
  EnvOptions o;
  o.render = false;
  return o;
}

TEST(TaskSuite, TwelveTasksInThreeFamilies) {
  const auto& suite = BuiltinTaskSuite();
  ASSERT_EQ(suite.size(), 12u);
  int families[3] = {0, 0, 0};
  for (const auto& t : suite) {
    families[static_cast<int>(t.family)]++;
    EXPECT_FALSE(t.instruction.empty());
    EXPECT_FALSE(t.goal.empty());
    EXPECT_EQ(FindTask(t.name), &t);
  }
  EXPECT_EQ(families[0], 4);
  EXPECT_EQ(families[1], 4);
  EXPECT_EQ(families[2], 4);
  EXPECT_EQ(FindTask("no_such_task"), nullptr);
}

TEST(TaskSuite, InitialStatesAreFixedAndSeparated) {
  const TaskSpec& t = BuiltinTaskSuite()[0];
  for (int i = 0; i < kInitStatesPerTask; ++i) {
    InitialState a = SampleInitialState(t, i), b = SampleInitialState(t, i);
    ASSERT_EQ(a.poses.size(), b.poses.size());
    for (size_t k = 0; k < a.poses.size(); ++k) {
      EXPECT_EQ(a.poses[k].x, b.poses[k].x);
      EXPECT_EQ(a.poses[k].y, b.poses[k].y);
      for (size_t j = 0; j < k; ++j) {
        EXPECT_GE(std::hypot(a.poses[k].x - a.poses[j].x,
                             a.poses[k].y - a.poses[j].y),
                  kMinObjectSeparation - 1e-9);
      }
    }
  }
  EXPECT_NE(SampleInitialState(t, 0).poses[0].x,
            SampleInitialState(t, 1).poses[0].x);
}

class PerTask : public testing::TestWithParam<int> {};

TEST_P(PerTask, GoalFalseAtEveryInitialStateAndTrueWhenTheExpertSucceeds) {
  const TaskSpec& spec = BuiltinTaskSuite()[GetParam()];
  auto task = TaskModel::Create(spec, PhysicsOnly());
  ASSERT_TRUE(task.ok()) << task.status();
  auto env = ManipulationEnv::Create(*task, PhysicsOnly(), 0, 0);
  ASSERT_TRUE(env.ok()) << env.status();
  for (int i = 0; i < kInitStatesPerTask; ++i) {
    (*env)->Reset(i);
    EXPECT_FALSE((*task)->goal().Satisfied((*env)->model(), (*env)->data()))
        << spec.name << " init " << i;
  }
  auto expert = ScriptedExpert::Create(**task);
  ASSERT_TRUE(expert.ok());
  int successes = 0;
  float a[kActionDim];
  for (int i = 0; i < kExpertEpisodes; ++i) {
    (*env)->Reset(i);
    expert->Reset();
    for (;;) {
      expert->Act(**env, a);
      absl::StatusOr<StepResult> r = (*env)->Step(a);
      ASSERT_TRUE(r.ok());
      if (r->success) {
        EXPECT_TRUE((*task)->goal().Satisfied((*env)->model(), (*env)->data()));
        EXPECT_EQ(r->reward, 1.0f);
        ++successes;
      }
      if (r->done || r->truncated) break;
    }
  }
  EXPECT_GE(successes, kExpertEpisodes * 9 / 10) << spec.name;
}

INSTANTIATE_TEST_SUITE_P(AllTasks, PerTask, testing::Range(0, 12),
                         [](const testing::TestParamInfo<int>& i) {
                           return BuiltinTaskSuite()[i.param].name;
                         });

}  // namespace
}  // namespace rlvla3
