// The pipeline model's clock and queues against cases with known answers
// (issue 62): an M/M/1 queue's mean time in system, the lock-step run's
// round time, a lone env's cycle, a learner-bound run's update rate and its
// bounded lag. Simulated time only: nothing here depends on the machine.
#include "services/plan/pipeline_model.h"

#include <gtest/gtest.h>

#include <deque>
#include <random>
#include <string>
#include <vector>

#include "services/plan/event_queue.h"

namespace rlvla3 {
namespace {

TEST(EventQueue, RunsInTimeOrderTiesInScheduleOrder) {
  EventQueue q;
  std::string order;
  q.At(2.0, [&] { order += "c"; });
  q.At(1.0, [&] { order += "a"; });
  q.At(1.0, [&] {
    order += "b";
    q.After(0.5, [&] { order += "x"; });  // at 1.5: before c
  });
  q.At(9.0, [&] { order += "late"; });
  q.RunUntil(5.0);
  EXPECT_EQ(order, "abxc");
  EXPECT_EQ(q.now(), 5.0);
  EXPECT_EQ(q.pending(), 1u);
}

// M/M/1 with arrival rate 0.5 and service rate 1: the mean time in the
// system is 1 / (mu - lambda) = 2.
TEST(EventQueue, AnMM1QueuesMeanTimeInSystemIsOneOverMuMinusLambda) {
  EventQueue q;
  std::mt19937_64 rng(7);
  std::exponential_distribution<double> arrival(0.5), service(1.0);
  std::deque<double> line;  // arrival times of those in the system
  bool busy = false;
  double total = 0;
  int64_t done = 0;
  std::function<void()> serve = [&] {
    busy = true;
    q.After(service(rng), [&] {
      total += q.now() - line.front();
      line.pop_front();
      ++done;
      busy = false;
      if (!line.empty()) serve();
    });
  };
  std::function<void()> arrive = [&] {
    line.push_back(q.now());
    if (!busy) serve();
    q.After(arrival(rng), arrive);
  };
  q.At(0.0, arrive);
  q.RunUntil(400000.0);
  ASSERT_GT(done, 150000);
  EXPECT_NEAR(total / double(done), 2.0, 0.1);
}

StageCosts Deterministic() {
  StageCosts c;
  c.env_step_s = 0.010;
  c.env_step_cv = 0;
  c.infer_fixed_s = 0.002;
  c.infer_per_obs_s = 0.0005;
  c.learn_per_step_s = 0.005;
  c.learn_per_sample_s = 0.001;
  return c;
}

// 4 envs on 4 workers, one batch of 4 per decision, 2 decisions, then one
// step over the 8 samples: a round is 2 x (0.004 + 0.010) + 0.013 s.
TEST(PipelineModel, LockStepRoundsTakeInferencePlusStepsPlusTheUpdate) {
  PipelineShape s;
  s.sync = true;
  s.envs = s.env_workers = s.max_batch = 4;
  s.rollout_len = 2;
  s.global_batch = 8;
  const PipelinePrediction p = SimulatePipeline(Deterministic(), s, {41.0, 1});
  EXPECT_NEAR(p.frames_per_s, 8 / 0.041, 0.2);
  EXPECT_NEAR(p.updates_per_s, 1 / 0.041, 0.05);
  EXPECT_EQ(p.lag_mean, 0);
  EXPECT_NEAR(p.env_busy, 0.020 / 0.041, 0.01);
}

// One env, batches of one: it waits for its action, then steps.
TEST(PipelineModel, ALoneEnvCyclesThroughInferenceAndItsStep) {
  PipelineShape s;
  s.envs = s.env_workers = s.max_batch = 1;
  s.rollout_len = 4;
  s.global_batch = 16;
  s.max_policy_lag = 1;
  const PipelinePrediction p = SimulatePipeline(Deterministic(), s, {100.0, 1});
  EXPECT_NEAR(p.frames_per_s, 1 / 0.0125, 0.2);
  EXPECT_NEAR(p.mean_batch, 1.0, 1e-9);
  EXPECT_EQ(p.bottleneck, "env");
}

// A learner slower than the envs sets the pace: its update rate, and the
// rollout parks so that no sample is more than max_policy_lag + 1 versions
// old when trained.
TEST(PipelineModel, ASlowLearnerSetsThePaceAndTheLagStaysBounded) {
  StageCosts c = Deterministic();
  c.learn_per_sample_s = 0.01;  // 100 samples/s at most
  PipelineShape s;
  s.envs = s.env_workers = s.max_batch = 8;
  s.rollout_len = 4;
  s.global_batch = 32;
  s.max_policy_lag = 2;
  const PipelinePrediction p = SimulatePipeline(c, s, {200.0, 3});
  const double step = 0.005 + 0.01 * 32;
  EXPECT_NEAR(p.updates_per_s, 1 / step, 0.02);
  EXPECT_NEAR(p.samples_per_s, 32 / step, 1.0);
  EXPECT_EQ(p.bottleneck, "learner");
  EXPECT_GT(p.learner_busy, 0.99);
  EXPECT_LE(p.lag_mean, s.max_policy_lag + 1);
  EXPECT_NEAR(p.frames_per_s, p.samples_per_s, 0.05 * p.samples_per_s);
}

// Heavy-tailed steps: async keeps the workers busy while lock-step waits
// for the slowest env of every decision.
TEST(PipelineModel, WithHeavyTailedStepsAsyncOutrunsLockStep) {
  StageCosts c = Deterministic();
  c.env_step_cv = 1.5;
  c.learn_per_sample_s = 0.0001;
  PipelineShape s;
  s.envs = 16;
  s.env_workers = 4;
  s.max_batch = 8;
  s.rollout_len = 8;
  s.global_batch = 128;
  const PipelinePrediction async = SimulatePipeline(c, s, {300.0, 5});
  s.sync = true;
  const PipelinePrediction sync = SimulatePipeline(c, s, {300.0, 5});
  EXPECT_GT(async.frames_per_s, 1.1 * sync.frames_per_s);
  EXPECT_GT(async.env_busy, sync.env_busy);
}

}  // namespace
}  // namespace rlvla3
