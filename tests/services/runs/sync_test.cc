// run.mode sync across processes: two rollout processes, one inference
// server and a learner, each a real process on loopback. Every inference
// batch waits for the observations of every env of both workers that is not
// parked (the batcher's own 0.1 ms wait would make batches of one or two),
// envs resume on the version the inference server serves (so the learner,
// whose lag bound is 0 in sync mode, drops no sample), and each optimizer
// step trains the whole global batch.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "services/net/grpc_common.h"
#include "services/net/role_status.h"
#include "tests/services/runs/serve_roles.h"
#include "tests/test_dir.h"

namespace rlvla3 {
namespace {

using Clock = std::chrono::steady_clock;

TEST(SyncAcrossProcesses, EveryBatchWaitsForEveryEnvOfEveryWorker) {
  testutil::TestDir dir;
  // 2 workers x 2 envs; PPO, 8-decision segments: a global batch of 32.
  const std::vector<std::string> sync = {
      "--set", "run.mode=sync",          "--set", "env.num_envs=2",
      "--set", "rl.rollout_len=8",       "--set", "cluster.rollout_workers=2",
      "--set", "batcher.max_wait_ms=0.1"};
  auto learner = testutil::Learner(dir, sync);
  ASSERT_TRUE(learner->WaitReady(120)) << learner->Log();
  auto inference =
      testutil::Inference(dir, "inference", learner->address(), sync);
  ASSERT_TRUE(inference->WaitReady(120)) << inference->Log();
  std::vector<std::unique_ptr<testutil::RoleProcess>> workers;
  for (const char* w : {"0", "1"}) {
    workers.push_back(testutil::Rollout(dir, w, learner->address(),
                                        inference->address(), sync));
    ASSERT_TRUE(workers.back()->WaitReady(120)) << workers.back()->Log();
  }
  // The learner's status once it has taken `steps` optimizer steps, and the
  // inference server's right after.
  v1::RoleStatus l, i;
  auto at_step = [&](uint64_t steps) {
    const auto end = Clock::now() + std::chrono::seconds(120);
    while (Clock::now() < end) {
      absl::StatusOr<v1::RoleStatus> s =
          QueryRoleStatus(Role::kLearner, learner->address(), NetOptions());
      if (s.ok() && s->optimizer_steps() >= steps) {
        l = *s;
        s = QueryRoleStatus(Role::kInference, inference->address(),
                            NetOptions());
        if (s.ok()) i = *s;
        return s.ok();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  };
  // From step 2 on, both workers have joined (the first to start steps
  // alone until the other registers).
  ASSERT_TRUE(at_step(2)) << learner->Log() << inference->Log();
  const v1::RoleStatus i0 = i;
  ASSERT_TRUE(at_step(6)) << learner->Log() << inference->Log();
  // Lock-step: no sample from an older version, whole batches only.
  EXPECT_EQ(l.dropped_samples(), 0u) << learner->Log();
  EXPECT_EQ(l.trained_samples() % 32, 0u) << l.trained_samples();
  // The barrier: batches of all four envs, except where the two workers
  // hear a new version at different moments (then one batch each).
  const double window_mean =
      double(i.observations() - i0.observations()) /
      double(std::max<uint64_t>(1, i.batches() - i0.batches()));
  EXPECT_GE(window_mean, 3.2) << inference->Log();
  for (auto& w : workers) {
    EXPECT_TRUE(w->running()) << w->Log();
    w->Signal(SIGTERM);
    EXPECT_EQ(w->Wait(), 0) << w->Log();
  }
}

}  // namespace
}  // namespace rlvla3
