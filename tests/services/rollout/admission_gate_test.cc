#include "services/rollout/admission_gate.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <thread>

namespace rlvla3 {
namespace {

TEST(AdmissionGate, BudgetIsLagPlusOneGlobalBatches) {
  AdmissionGate gate(/*num_envs=*/2, /*quota=*/4, /*max_policy_lag=*/1);
  EXPECT_EQ(gate.budget(), 8);
  for (int64_t u = 0; u < 8; ++u) EXPECT_TRUE(gate.TryAdmit(0, u));
  EXPECT_FALSE(gate.TryAdmit(0, 8));  // parked
  EXPECT_EQ(gate.parked(), 1);
  EXPECT_TRUE(gate.TryAdmit(1, 7));
  // The learner finishes version 1: env 0's unit 8 fits (budget 12).
  std::vector<int> released = gate.Advance(1);
  EXPECT_EQ(released, std::vector<int>{0});
  EXPECT_EQ(gate.parked(), 0);
  EXPECT_EQ(gate.budget(), 12);
  EXPECT_EQ(gate.parks(), 1u);
}

TEST(AdmissionGate, LockStepWithZeroLag) {
  AdmissionGate gate(3, /*quota=*/2, /*max_policy_lag=*/0);
  for (int e = 0; e < 3; ++e) {
    EXPECT_TRUE(gate.TryAdmit(e, 0));
    EXPECT_TRUE(gate.TryAdmit(e, 1));
    EXPECT_FALSE(gate.TryAdmit(e, 2));
  }
  EXPECT_EQ(gate.parked(), 3);
  std::vector<int> r = gate.Advance(1);
  std::sort(r.begin(), r.end());
  EXPECT_EQ(r, (std::vector<int>{0, 1, 2}));
  // An advance that opens no budget releases nobody.
  EXPECT_FALSE(gate.TryAdmit(0, 4));
  EXPECT_TRUE(gate.Advance(1).empty());
  EXPECT_EQ(gate.ReleaseAll(), std::vector<int>{0});
}

// The time parked envs waited comes back with them (the rollout's
// env_time_parked_us), and only for the envs released.
TEST(AdmissionGate, AdvanceReportsHowLongTheReleasedEnvsWereParked) {
  AdmissionGate gate(2, /*quota=*/1, /*max_policy_lag=*/0);
  EXPECT_FALSE(gate.TryAdmit(0, 1));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(gate.TryAdmit(1, 2));
  int64_t parked_ns = 0;
  EXPECT_EQ(gate.Advance(1, &parked_ns), std::vector<int>{0});
  EXPECT_GE(parked_ns, 20'000'000);
  parked_ns = 0;
  EXPECT_TRUE(gate.Advance(1, &parked_ns).empty());
  EXPECT_EQ(parked_ns, 0);
}

// Units lost on the way leave every env parked at a version that never
// advances; a top-up (the learner starved) adds one quota to every env's
// budget for good, and later versions add theirs on top of it.
TEST(AdmissionGate, ATopUpAddsOneQuotaForGoodWithoutAVersion) {
  AdmissionGate gate(2, /*quota=*/4, /*max_policy_lag=*/1);
  EXPECT_FALSE(gate.TryAdmit(0, 8));
  EXPECT_FALSE(gate.TryAdmit(1, 8));
  EXPECT_TRUE(gate.Advance(0).empty());  // the version stands still
  std::vector<int> r = gate.TopUp(1);
  std::sort(r.begin(), r.end());
  EXPECT_EQ(r, (std::vector<int>{0, 1}));
  EXPECT_EQ(gate.budget(), 12);
  EXPECT_EQ(gate.topped_up_quotas(), 1);
  EXPECT_FALSE(gate.TryAdmit(0, 12));
  EXPECT_EQ(gate.Advance(1), std::vector<int>{0});
  EXPECT_EQ(gate.budget(), 16);
  EXPECT_TRUE(gate.TopUp(0).empty());
  EXPECT_EQ(gate.budget(), 16);
}

// What the learner's heartbeat replies say: a count heard again, or heard
// while no env is parked (the envs are moving), tops up nothing; a higher
// count does, once; a restarted learner (another incarnation) counts from
// zero and its first count is news however low.
TEST(AdmissionGate, OnlyANewStarvationWithEnvsParkedTopsUp) {
  AdmissionGate gate(1, /*quota=*/2, /*max_policy_lag=*/0);
  EXPECT_TRUE(gate.TopUpIfStarved(7, 1).empty());  // none parked
  EXPECT_EQ(gate.topped_up_quotas(), 0);
  EXPECT_FALSE(gate.TryAdmit(0, 2));
  EXPECT_TRUE(gate.TopUpIfStarved(7, 1).empty());  // heard already
  EXPECT_EQ(gate.TopUpIfStarved(7, 2), std::vector<int>{0});
  EXPECT_FALSE(gate.TryAdmit(0, 4));
  EXPECT_TRUE(gate.TopUpIfStarved(7, 2).empty());
  EXPECT_TRUE(gate.TopUpIfStarved(9, 0).empty());  // restarted, not starved
  EXPECT_EQ(gate.TopUpIfStarved(9, 1), std::vector<int>{0});
  EXPECT_EQ(gate.topped_up_quotas(), 2);
  EXPECT_EQ(gate.budget(), 6);
}

}  // namespace
}  // namespace rlvla3
