// The graded outcome (env.progress_reward): on every built-in task an
// episode's return is success + w x (final - initial potential); the expert's
// successes outrank a failure that grasped and lifted, which outranks one
// that never moved; and the potential stays within [0, 1].
#include "envs/task_progress.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "envs/manipulation_env.h"
#include "envs/scripted_expert.h"

namespace rlvla3 {
namespace {

constexpr double kWeight = 0.25;

EnvOptions Graded() {
  EnvOptions o;
  o.render = false;
  o.progress_reward = kWeight;
  o.max_episode_steps = 200;
  return o;
}

struct Episode {
  double ret = 0;
  bool success = false;
};

// One episode from `init`: the expert acts until its script reaches phase
// `stop_phase` (then the arm is told to hold still), or to the end.
Episode RunEpisode(ManipulationEnv* env, ScriptedExpert* expert, int init,
                   int stop_phase) {
  env->Reset(init);
  expert->Reset();
  Episode e;
  float a[kActionDim];
  for (;;) {
    expert->Act(*env, a);
    if (expert->phase() >= stop_phase) std::fill(a, a + kActionDim - 1, 0.0f);
    absl::StatusOr<StepResult> r = env->Step(a);
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) return e;
    e.ret += r->reward;
    if (r->success) e.success = true;
    if (r->done || r->truncated) return e;
  }
}

class Progress : public testing::TestWithParam<int> {};

TEST_P(Progress, SuccessOutranksEveryFailureAndProgressRanksTheFailures) {
  const TaskSpec& spec = BuiltinTaskSuite()[GetParam()];
  auto task = TaskModel::Create(spec, Graded());
  ASSERT_TRUE(task.ok()) << task.status();
  ASSERT_NE((*task)->progress(), nullptr);
  auto env = ManipulationEnv::Create(*task, Graded(), 0, 0);
  ASSERT_TRUE(env.ok()) << env.status();
  auto expert = ScriptedExpert::Create(**task);
  ASSERT_TRUE(expert.ok());
  const TaskProgress& p = *(*task)->progress();
  for (int init = 0; init < 3; ++init) {
    // The potential at the start, and the return's bound from it.
    (*env)->Reset(init);
    const TaskProgress::Start s = p.Begin((*env)->model(), (*env)->data());
    const double phi0 = p.Potential((*env)->model(), (*env)->data(), s);
    ASSERT_GE(phi0, 0.0);
    ASSERT_LT(phi0, 0.5) << spec.name;  // nothing done yet
    const Episode full = RunEpisode(env->get(), &*expert, init, 1000);
    if (full.success) {
      EXPECT_NEAR(full.ret, 1 + kWeight * (1 - phi0), 1e-4) << spec.name;
    }
    const Episode idle = RunEpisode(env->get(), &*expert, init, 0);
    EXPECT_FALSE(idle.success);
    EXPECT_LT(std::abs(idle.ret), 0.05) << spec.name;  // never moved
    // Part of the script: hover, descend, grasp, lift (drawers: reach the
    // handle and begin), then hold still to the time limit.
    const Episode half = RunEpisode(env->get(), &*expert, init, 4);
    if (half.success) continue;
    EXPECT_GT(half.ret, idle.ret + 0.02) << spec.name << " init " << init;
    EXPECT_LE(half.ret, kWeight + 1e-6) << spec.name;  // below any success
    if (full.success) EXPECT_GT(full.ret, half.ret + 0.5);
  }
}

INSTANTIATE_TEST_SUITE_P(AllTasks, Progress, testing::Range(0, 12),
                         [](const testing::TestParamInfo<int>& i) {
                           return BuiltinTaskSuite()[i.param].name;
                         });

}  // namespace
}  // namespace rlvla3
