#include "services/learner/advantages.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace rlvla3 {
namespace {

TEST(Gae, MatchesHandComputedValues) {
  // gamma 0.9, lambda 0.8, no terminal, bootstrap V(s3) = 1.
  // delta2 = 1 + 0.9*1 - 0.5 = 1.4
  // delta1 = 0 + 0.9*0.5 - 0.2 = 0.25
  // delta0 = 0 + 0.9*0.2 - 0.1 = 0.08
  // A2 = 1.4; A1 = 0.25 + 0.72*1.4 = 1.258; A0 = 0.08 + 0.72*1.258 = 0.98576
  const std::vector<float> r = {0, 0, 1}, v = {0.1f, 0.2f, 0.5f};
  const std::vector<uint8_t> term = {0, 0, 0};
  std::vector<float> adv(3), ret(3);
  ComputeGae(r, v, term, 1.0f, 0.9f, 0.8f, absl::MakeSpan(adv),
             absl::MakeSpan(ret));
  EXPECT_NEAR(adv[2], 1.4f, 1e-6);
  EXPECT_NEAR(adv[1], 1.258f, 1e-6);
  EXPECT_NEAR(adv[0], 0.98576f, 1e-6);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(ret[i], adv[i] + v[i], 1e-6);
}

TEST(Gae, TerminalStopsBootstrapAndPropagation) {
  // Episode ends after decision 1 (reward 1); decision 2 starts a new one.
  // A2 = 0 + 0.9*2 - 0.5 = 1.3 (bootstrap 2)
  // A1 = 1 - 0.2 = 0.8 (terminal: no V(s2), no A2)
  // A0 = 0 + 0.9*0.2 - 0.1 + 0.72*0.8 = 0.656
  const std::vector<float> r = {0, 1, 0}, v = {0.1f, 0.2f, 0.5f};
  const std::vector<uint8_t> term = {0, 1, 0};
  std::vector<float> adv(3), ret(3);
  ComputeGae(r, v, term, 2.0f, 0.9f, 0.8f, absl::MakeSpan(adv),
             absl::MakeSpan(ret));
  EXPECT_NEAR(adv[2], 1.3f, 1e-6);
  EXPECT_NEAR(adv[1], 0.8f, 1e-6);
  EXPECT_NEAR(adv[0], 0.656f, 1e-6);
}

TEST(Gae, LambdaOneIsDiscountedReturnMinusValue) {
  const std::vector<float> r = {1, 2, 3}, v = {0.5f, 0.5f, 0.5f};
  const std::vector<uint8_t> term = {0, 0, 1};
  std::vector<float> adv(3), ret(3);
  ComputeGae(r, v, term, 100.0f, 0.5f, 1.0f, absl::MakeSpan(adv),
             absl::MakeSpan(ret));
  EXPECT_NEAR(ret[0], 1 + 0.5 * 2 + 0.25 * 3, 1e-5);
  EXPECT_NEAR(ret[1], 2 + 0.5 * 3, 1e-5);
  EXPECT_NEAR(ret[2], 3, 1e-5);
}

TEST(Grpo, GroupNormalisedSuccess) {
  // Returns {1, 0, 0, 1}: mean 0.5, population std 0.5 -> +-1.
  const std::vector<float> a = GroupNormalizedAdvantages({1, 0, 0, 1});
  ASSERT_EQ(a.size(), 4u);
  EXPECT_NEAR(a[0], 1.0f, 1e-5);
  EXPECT_NEAR(a[1], -1.0f, 1e-5);
  EXPECT_NEAR(a[3], 1.0f, 1e-5);
  // {1, 0, 0, 0}: mean 0.25, std sqrt(0.1875) = 0.4330127.
  const std::vector<float> b = GroupNormalizedAdvantages({1, 0, 0, 0});
  EXPECT_NEAR(b[0], 0.75f / 0.4330127f, 1e-4);
  EXPECT_NEAR(b[1], -0.25f / 0.4330127f, 1e-4);
}

// Returns a hair apart (graded outcomes of failures) are not scaled up to
// full-size advantages past the floor; 0/1 success is above it.
TEST(Grpo, AStdFloorKeepsSmallDifferencesSmall) {
  const std::vector<float> near =
      GroupNormalizedAdvantages({0.01f, 0, 0, 0}, 1e-6f, /*std_floor=*/0.1f);
  EXPECT_NEAR(near[0], 0.0075f / 0.1f, 1e-4);
  EXPECT_GT(GroupNormalizedAdvantages({0.01f, 0, 0, 0})[0], 1.5f);
  const std::vector<float> b =
      GroupNormalizedAdvantages({1, 0, 0, 0}, 1e-6f, 0.1f);
  EXPECT_NEAR(b[0], 0.75f / 0.4330127f, 1e-4);  // unchanged
}

TEST(Grpo, UniformGroupHasNoSignal) {
  for (float v : GroupNormalizedAdvantages({1, 1, 1})) EXPECT_EQ(v, 0.0f);
  for (float v : GroupNormalizedAdvantages({0, 0})) EXPECT_EQ(v, 0.0f);
}

}  // namespace
}  // namespace rlvla3
