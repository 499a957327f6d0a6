// RestartPolicy: what `up --local` does when a role process ends.
#include "services/runs/restart_policy.h"

#include <gtest/gtest.h>

#include <chrono>

namespace rlvla3 {
namespace {

using Clock = RestartPolicy::Clock;
using std::chrono::seconds;

TEST(RestartPolicy, TheLearnersCleanExitEndsTheRunWithZero) {
  RestartPolicy p;
  const Clock::time_point t0 = Clock::now();
  const ExitDecision d = p.OnExit(t0 + seconds(5), t0, 0, /*learner=*/true);
  EXPECT_TRUE(d.end_run);
  EXPECT_EQ(d.run_exit_code, 0);
}

TEST(RestartPolicy, ExitTwoIsFinalForAnyRole) {
  for (bool learner : {true, false}) {
    RestartPolicy p;
    const Clock::time_point t0 = Clock::now();
    const ExitDecision d = p.OnExit(t0 + seconds(1), t0, 2, learner);
    EXPECT_TRUE(d.end_run) << learner;
    EXPECT_EQ(d.run_exit_code, 2);
    EXPECT_NE(d.why.find("exit code 2"), std::string::npos) << d.why;
  }
}

TEST(RestartPolicy, CrashesBackOffAndTheFifthInTenMinutesEndsTheRun) {
  RestartPolicy p;
  const Clock::time_point t0 = Clock::now();
  Clock::time_point t = t0;
  const int delays[] = {1, 2, 4, 8};
  for (int i = 0; i < 4; ++i) {
    const Clock::time_point started = t;
    t += seconds(10);  // a short run: the backoff is not reset
    const ExitDecision d = p.OnExit(t, started, i % 2 == 0 ? 1 : -9, false);
    ASSERT_FALSE(d.end_run) << i;
    EXPECT_EQ(d.delay, seconds(delays[i])) << i;
    EXPECT_EQ(d.restart, i + 1);
  }
  const ExitDecision fifth = p.OnExit(t + seconds(10), t, 139, false);
  EXPECT_TRUE(fifth.end_run);
  EXPECT_EQ(fifth.run_exit_code, 1);
  EXPECT_NE(fifth.why.find("keeps crashing: 5 times"), std::string::npos)
      << fifth.why;
}

TEST(RestartPolicy, CrashesFarApartNeverEndTheRunAndAStableRunResetsTheDelay) {
  RestartPolicy p;
  Clock::time_point t = Clock::now();
  for (int i = 0; i < 20; ++i) {
    const Clock::time_point started = t;
    t += seconds(200);  // 3 per 10 minutes at most; each run stable
    const ExitDecision d = p.OnExit(t, started, 1, i % 2 == 0);
    ASSERT_FALSE(d.end_run) << i;
    EXPECT_EQ(d.delay, seconds(1)) << i;
  }
}

TEST(RestartPolicy, TheDelayIsCappedAtThirtySeconds) {
  RestartPolicy::Options o;
  o.max_crashes = 100;
  RestartPolicy p(o);
  Clock::time_point t = Clock::now();
  ExitDecision d;
  for (int i = 0; i < 10; ++i) {
    t += seconds(1);
    d = p.OnExit(t, t, 1, false);
  }
  EXPECT_EQ(d.delay, seconds(30));
}

}  // namespace
}  // namespace rlvla3
