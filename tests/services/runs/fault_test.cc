// Faults a multi-process run must survive, injected for real: inference
// servers killed with SIGKILL under a running rollout worker (it fails over to
// the other server, waits while none is up, and reconnects when one is back,
// without the worker process ever exiting); envs of two rollout processes
// that throw, hang past the step deadline, return a wrong shape or NaN (each
// reset and counted while training goes on); a rollout process stopped with
// SIGSTOP (alive, silent) flagged by the learner's heartbeat roster and
// `rl-vla3 status`, and cleared once it resumes.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "services/net/grpc_common.h"
#include "services/net/role_status.h"
#include "tests/role_process.h"
#include "tests/services/runs/serve_roles.h"
#include "tests/test_dir.h"

namespace rlvla3 {
namespace {

using testutil::Args;
using testutil::Inference;
using testutil::Learner;
using testutil::RoleProcess;
using testutil::Rollout;
using Clock = std::chrono::steady_clock;

absl::StatusOr<v1::RoleStatus> RolloutStatus(const std::string& target) {
  return QueryRoleStatus(Role::kRollout, target, NetOptions());
}

// Waits until the rollout worker's frames pass `above` (true) or time runs
// out (false); `last` gets its latest status.
bool FramesPass(const std::string& rollout, uint64_t above, double timeout_s,
                v1::RoleStatus* last) {
  const auto end =
      Clock::now() + std::chrono::milliseconds(int64_t(timeout_s * 1000));
  while (Clock::now() < end) {
    absl::StatusOr<v1::RoleStatus> s = RolloutStatus(rollout);
    if (s.ok()) {
      *last = *s;
      if (s->env_frames() > above) return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return false;
}

TEST(InferenceFaults, RolloutFailsOverWaitsAndReconnectsWithoutExiting) {
  testutil::TestDir dir;
  auto learner = Learner(dir, {});
  ASSERT_TRUE(learner->WaitReady(120)) << learner->Log();
  auto a = Inference(dir, "inference_a", learner->address(), {});
  ASSERT_TRUE(a->WaitReady(120)) << a->Log();
  auto b = Inference(dir, "inference_b", learner->address(), {});
  ASSERT_TRUE(b->WaitReady(120)) << b->Log();
  const std::string a_address = a->address();
  auto worker =
      Rollout(dir, "0", learner->address(), a_address + "," + b->address(), {});
  RoleProcess& rollout = *worker;
  ASSERT_TRUE(rollout.WaitReady(120)) << rollout.Log();
  v1::RoleStatus st;
  ASSERT_TRUE(FramesPass(rollout.address(), 20, 60, &st)) << rollout.Log();

  // Server A dies: its envs' observations in flight move to B and every env
  // keeps stepping.
  a->Signal(SIGKILL);
  a->Wait();
  const uint64_t at_kill = st.env_frames();
  ASSERT_TRUE(FramesPass(rollout.address(), at_kill + 40, 30, &st))
      << rollout.Log();
  EXPECT_GE(st.observation_failovers(), 1u) << rollout.Log();
  EXPECT_TRUE(rollout.running());

  // B dies too: no server at all. The worker waits, it does not exit.
  b->Signal(SIGKILL);
  b->Wait();
  std::this_thread::sleep_for(std::chrono::seconds(3));
  ASSERT_TRUE(rollout.running()) << rollout.Log();
  ASSERT_TRUE(FramesPass(rollout.address(), 0, 5, &st));
  const uint64_t idle = st.env_frames();

  // A comes back at its address: the worker re-opens its stream and steps.
  a = Inference(dir, "inference_a2", learner->address(), {}, a_address);
  ASSERT_TRUE(a->WaitReady(120)) << a->Log();
  ASSERT_TRUE(FramesPass(rollout.address(), idle + 40, 60, &st))
      << rollout.Log();
  EXPECT_GE(st.inference_reconnects(), 1u);
  EXPECT_TRUE(rollout.running());

  rollout.Signal(SIGTERM);
  EXPECT_EQ(rollout.Wait(), 0) << rollout.Log();
}

absl::StatusOr<v1::RoleStatus> LearnerStatus(const std::string& target) {
  return QueryRoleStatus(Role::kLearner, target, NetOptions());
}

TEST(EnvFaults, EveryInjectedFaultIsResetAndCountedWhileTrainingGoesOn) {
  testutil::TestDir dir;
  // Global env ids: worker 0 has envs 0-3, worker 1 envs 4-7.
  const std::vector<std::string> faults = {
      "--set", "env.faults=throw@1:3,hang@2:4,wrong_shape@5:3,nan@6:5",
      "--set", "env.fault_hang_s=1.5",
      "--set", "env.step_deadline_s=1",
      "--set", "cluster.rollout_workers=2"};
  auto learner = Learner(dir, faults);
  ASSERT_TRUE(learner->WaitReady(120)) << learner->Log();
  auto inference = Inference(dir, "inference", learner->address(), faults);
  ASSERT_TRUE(inference->WaitReady(120)) << inference->Log();
  std::vector<std::unique_ptr<RoleProcess>> workers;
  for (const char* w : {"0", "1"}) {
    workers.push_back(
        Rollout(dir, w, learner->address(), inference->address(), faults));
    ASSERT_TRUE(workers.back()->WaitReady(120)) << workers.back()->Log();
  }
  // Both workers report their two faults, and go on stepping past them.
  for (auto& w : workers) {
    v1::RoleStatus st;
    const auto end = Clock::now() + std::chrono::seconds(90);
    while (Clock::now() < end) {
      ASSERT_TRUE(FramesPass(w->address(), 0, 5, &st)) << w->Log();
      if (st.env_faults() >= 2 && st.env_frames() > 80) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
    }
    EXPECT_EQ(st.env_faults(), 2u) << w->Log();
    EXPECT_GT(st.env_frames(), 80u);
    EXPECT_TRUE(w->running());
  }
  // The learner keeps taking optimizer steps after the faults.
  absl::StatusOr<v1::RoleStatus> l = LearnerStatus(learner->address());
  ASSERT_TRUE(l.ok()) << l.status();
  const uint64_t steps = l->optimizer_steps();
  const auto end = Clock::now() + std::chrono::seconds(90);
  while (Clock::now() < end && l.ok() && l->optimizer_steps() < steps + 2) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    l = LearnerStatus(learner->address());
  }
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_GE(l->optimizer_steps(), steps + 2) << learner->Log();
  for (auto& w : workers) {
    w->Signal(SIGTERM);
    EXPECT_EQ(w->Wait(), 0) << w->Log();
  }
}

// `rl-vla3 status --learner ADDR`: exit code and what it printed.
std::pair<int, std::string> StatusVerb(const testutil::TestDir& dir,
                                       const std::string& learner) {
  RoleProcess p(RLVLA3_BINARY, Args({"status", "--learner", learner}), {},
                dir.File("status"));
  const int rc = p.Wait();
  return {rc, p.Stdout()};
}

TEST(Heartbeats, StoppedRoleIsFlaggedSilentAndClearedWhenItResumes) {
  testutil::TestDir dir;
  const std::vector<std::string> timing = {"--set", "cluster.heartbeat_s=0.3",
                                           "--set",
                                           "cluster.role_timeout_s=1.5"};
  auto learner = Learner(dir, timing);
  ASSERT_TRUE(learner->WaitReady(120)) << learner->Log();
  auto inference = Inference(dir, "inference", learner->address(), timing);
  ASSERT_TRUE(inference->WaitReady(120)) << inference->Log();
  auto worker =
      Rollout(dir, "0", learner->address(), inference->address(), timing);
  RoleProcess& rollout = *worker;
  ASSERT_TRUE(rollout.WaitReady(120)) << rollout.Log();
  auto wait_status = [&](int want_rc, double timeout_s) {
    const auto end =
        Clock::now() + std::chrono::milliseconds(int64_t(timeout_s * 1000));
    std::pair<int, std::string> r;
    do {
      r = StatusVerb(dir, learner->address());
      if (r.first == want_rc) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
    } while (Clock::now() < end);
    return r;
  };
  auto [rc, out] = wait_status(0, 30);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("rollout    " + rollout.address()), std::string::npos)
      << out;
  EXPECT_NE(out.find("inference  " + inference->address()), std::string::npos)
      << out;
  rollout.Signal(SIGSTOP);  // alive, but silent
  std::tie(rc, out) = wait_status(1, 30);
  EXPECT_EQ(rc, 1) << out;
  const size_t line = out.find("rollout    " + rollout.address());
  ASSERT_NE(line, std::string::npos) << out;
  EXPECT_NE(out.find("SILENT", line), std::string::npos) << out;
  EXPECT_EQ(out.find("SILENT", out.find("inference  ")),
            out.find("SILENT", line))
      << "only the stopped role is silent:\n"
      << out;
  rollout.Signal(SIGCONT);
  std::tie(rc, out) = wait_status(0, 30);
  EXPECT_EQ(rc, 0) << out;
  rollout.Signal(SIGTERM);
  EXPECT_EQ(rollout.Wait(), 0) << rollout.Log();
}

}  // namespace
}  // namespace rlvla3
