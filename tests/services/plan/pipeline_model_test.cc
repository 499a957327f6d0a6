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
#include "services/plan/shared_cores.h"

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

// Across processes each observation's round trip adds its CPU and its wait
// to the lone env's cycle (0.0125 s in one process).
TEST(PipelineModel, TheWireBetweenProcessesLengthensEachDecision) {
  StageCosts c = Deterministic();
  c.wire_obs_s = 0.002;
  c.wire_obs_wait_s = 0.003;
  PipelineShape s;
  s.envs = s.env_workers = s.max_batch = 1;
  s.rollout_len = 4;
  s.global_batch = 16;
  const PipelinePrediction p = SimulatePipeline(c, s, {100.0, 1});
  EXPECT_NEAR(p.frames_per_s, 1 / 0.0175, 0.2);
  // Lock-step: a round of 2 decisions is 2 x (0.004 + 0.010 + 0.005), the
  // segments' CPU, the update, the weights loaded.
  c.wire_sample_s = 0.0005;
  c.wire_weights_s = 0.002;
  s.sync = true;
  s.envs = s.env_workers = s.max_batch = 4;
  s.rollout_len = 2;
  s.global_batch = 8;
  const double round = 2 * 0.019 + 8 * 0.0005 + 0.013 + 0.002;
  const PipelinePrediction q = SimulatePipeline(c, s, {100 * round, 1});
  EXPECT_NEAR(q.frames_per_s, 8 / round, 0.2);
}

// Lag 0 as the runtime's admission gate runs it: each env takes its quota
// (rollout_len here) and parks until the update, so a round lasts as long as
// the slowest env's quota, not the mean env's (heavy tails cost lock-step's
// price); one more version of lag lets the fast envs go on.
TEST(PipelineModel, AtLagZeroEachRoundWaitsForTheSlowestEnvsShare) {
  StageCosts c = Deterministic();
  c.env_step_cv = 1.5;
  c.infer_fixed_s = 0.0001;
  c.infer_per_obs_s = 0;
  c.learn_per_step_s = 0.0001;
  c.learn_per_sample_s = 0;
  PipelineShape s;
  s.envs = s.env_workers = s.max_batch = 8;
  s.max_wait_s = 0;
  s.rollout_len = 4;
  s.global_batch = 32;
  s.max_policy_lag = 0;
  const PipelinePrediction lag0 = SimulatePipeline(c, s, {400.0, 5});
  s.max_policy_lag = 2;
  const PipelinePrediction lag2 = SimulatePipeline(c, s, {400.0, 5});
  const double free_running = 8 / 0.0101;  // every env stepping
  EXPECT_LT(lag0.samples_per_s, 0.7 * free_running);
  EXPECT_GT(lag2.samples_per_s, 0.8 * free_running);
  EXPECT_EQ(lag0.lag_mean, 0);
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

// Two one-thread jobs of 1 s on one core share it: both end at 2 s; a third
// started at 1 s slows them to a third each.
TEST(SharedCores, JobsShareTheCoresEquallyAtEqualWeight) {
  EventQueue q;
  SharedCores cpu(&q, 1);
  std::vector<double> ends;
  cpu.Start(1.0, 1, 1, [&] { ends.push_back(q.now()); });
  cpu.Start(1.0, 1, 1, [&] { ends.push_back(q.now()); });
  q.RunUntil(10);
  ASSERT_EQ(ends.size(), 2u);
  EXPECT_NEAR(ends[0], 2.0, 1e-9);
  EXPECT_NEAR(ends[1], 2.0, 1e-9);
  // 0.5 s done each by t=1, then thirds: 0.5 / (1/3) = 1.5 s more.
  ends.clear();
  EventQueue q2;
  SharedCores cpu2(&q2, 1);
  cpu2.Start(1.0, 1, 1, [&] { ends.push_back(q2.now()); });
  cpu2.Start(1.0, 1, 1, [&] { ends.push_back(q2.now()); });
  q2.At(1.0, [&] { cpu2.Start(5.0, 1, 1, [] {}); });
  q2.RunUntil(10);
  ASSERT_EQ(ends.size(), 2u);
  EXPECT_NEAR(ends[0], 2.5, 1e-9);
  EXPECT_NEAR(cpu2.core_seconds(), 7.0, 1e-9);  // all the work, no more
  EXPECT_EQ(cpu2.running(), 0u);
}

// A thread never runs faster than one core, and a niced job gets its
// weight's share: on 2 cores a 2-thread nice-0 job and a 1-thread nice-10
// job both get what they ask while there is room, then share by weight.
TEST(SharedCores, ANicedJobGetsItsWeightsShareAndNoThreadMoreThanACore) {
  EventQueue q;
  SharedCores unlimited(&q, 0);
  double end = -1;
  unlimited.Start(3.0, 8, 1, [&] { end = q.now(); });
  q.RunUntil(10);
  EXPECT_NEAR(end, 3.0, 1e-9);

  EventQueue q2;
  SharedCores cpu(&q2, 2);
  double fair = -1, niced = -1;
  const double w = NiceWeight(10);
  EXPECT_NEAR(w, 0.107, 0.002);
  cpu.Start(1.0, 2, 1, [&] { fair = q2.now(); });
  cpu.Start(1.0, 1, w, [&] { niced = q2.now(); });
  q2.RunUntil(100);
  // Three threads on two cores: nice-0 threads at 2 / (2 + w) each.
  const double fast = 2 / (2 + w);
  EXPECT_NEAR(fair, 1 / fast, 1e-9);
  const double done_niced = fair * fast * w;  // the niced job's progress
  EXPECT_NEAR(niced, fair + (1 - done_niced), 1e-9);
}

// The latency model's wait holds the env, not its worker: one env cycles
// through inference, compute and the wait; the worker is busy only for
// the compute. A decision of 3 frames is 3 x (compute + wait).
TEST(PipelineModel, TheLatencyWaitHoldsTheEnvButNotItsWorker) {
  StageCosts c = Deterministic();
  c.env_latency_s = 0.020;
  PipelineShape s;
  s.envs = s.env_workers = s.max_batch = 1;
  s.rollout_len = 4;
  s.global_batch = 16;
  PipelinePrediction p = SimulatePipeline(c, s, {100.0, 1});
  EXPECT_NEAR(p.frames_per_s, 1 / (0.0025 + 0.030), 0.1);
  EXPECT_NEAR(p.env_busy, 0.010 / 0.0325, 0.01);
  s.execute_steps = 3;
  p = SimulatePipeline(c, s, {100.0, 1});
  EXPECT_NEAR(p.frames_per_s, 3 / (0.0025 + 3 * 0.030), 0.1);
  EXPECT_NEAR(p.samples_per_s, p.frames_per_s / 3, 0.2);
}

// Data-parallel learners split the global batch and pay the all-reduce:
// a learner-bound run's step is per_step + per_sample * B / R + allreduce.
TEST(PipelineModel, LearnerRanksSplitTheBatchAndPayTheAllReduce) {
  StageCosts c = Deterministic();
  c.learn_per_sample_s = 0.01;
  c.allreduce_s = 0.02;
  PipelineShape s;
  s.envs = s.env_workers = s.max_batch = 8;
  s.rollout_len = 4;
  s.global_batch = 32;
  s.learner_ranks = 2;
  const PipelinePrediction p = SimulatePipeline(c, s, {200.0, 3});
  EXPECT_NEAR(p.updates_per_s, 1 / (0.005 + 0.01 * 16 + 0.02), 0.05);
  EXPECT_EQ(p.bottleneck, "learner");
  double shares = 0;
  for (double x : p.lag_share) shares += x;
  EXPECT_NEAR(shares, 1.0, 1e-9);
}

// On shared cores the stages slow one another: two workers on one core run
// a compute-bound env stage no faster than one.
TEST(PipelineModel, OnSharedCoresTheStagesSlowOneAnother) {
  StageCosts c = Deterministic();
  c.infer_fixed_s = c.infer_per_obs_s = 0;
  c.learn_per_step_s = c.learn_per_sample_s = 0;
  PipelineShape s;
  s.envs = 8;
  s.env_workers = 2;
  s.max_batch = 8;
  s.rollout_len = 4;
  s.global_batch = 32;
  s.max_policy_lag = 4;
  const PipelinePrediction own = SimulatePipeline(c, s, {50.0, 1});
  EXPECT_NEAR(own.frames_per_s, 200, 2);
  s.cpu.cores = 1;
  const PipelinePrediction shared = SimulatePipeline(c, s, {50.0, 1});
  EXPECT_NEAR(shared.frames_per_s, 100, 1);
}

}  // namespace
}  // namespace rlvla3
