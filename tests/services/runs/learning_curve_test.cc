// The learning curve users read in summary.txt and report.html: episodes by
// the version that started them, placed at the trained samples and wall time
// of that version, and a trained-samples rate over whole optimizer steps.
#include "services/runs/learning_curve.h"

#include <gtest/gtest.h>

#include <vector>

namespace rlvla3 {
namespace {

using Step = LocalEngine::LearningPoint;

TEST(LearningCurve, EpisodesSitAtTheSamplesAndTimeTheirVersionWasPublished) {
  // Versions 1..3 published after 100, 200, 300 samples at 10, 20, 30 s.
  const std::vector<Step> steps = {
      {100, 1, 0, 0, 10}, {200, 2, 0, 0, 20}, {300, 3, 0, 0, 30}};
  std::vector<EpisodeRecord> eps = {{0, 0, false}, {1, 0, true},
                                    {2, 0, true},  {3, 0, true},
                                    {3, 0, false}, {3, 0, true, true}};
  const std::vector<CurvePoint> c = LearningCurveByVersion(eps, steps, 2);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].version_lo, 0u);
  EXPECT_EQ(c[0].version_hi, 1u);
  EXPECT_EQ(c[0].episodes, 2);
  EXPECT_EQ(c[0].successes, 1);
  EXPECT_DOUBLE_EQ(c[0].trained_samples, 50);  // versions 0 (start) and 1
  EXPECT_DOUBLE_EQ(c[0].wall_s, 5);
  EXPECT_EQ(c[1].episodes, 3);  // the late episode is left out
  EXPECT_NEAR(c[1].trained_samples, (200 + 300 + 300) / 3.0, 1e-9);
  EXPECT_NEAR(c[1].wall_s, (20 + 30 + 30) / 3.0, 1e-9);
  EXPECT_EQ(FormatLearningCurve(c),
            " v0-1 @50 samples 5 s: 50% (2) | v2-3 @267 samples 27 s: 67% (3)");
  EXPECT_EQ(FormatLearningCurve({}), " n/a");
}

TEST(LearningCurve, TrainedSamplesRateIsSteadyWhenStepsAreEvenlyPaced) {
  // 128 samples every 1.5 s: a 2 s metrics window would read 64 or 128/s
  // alternately; over whole steps it reads 85/s throughout.
  std::vector<Step> steps;
  for (int i = 1; i <= 40; ++i) steps.push_back({128 * i, 0, 0, 0, 1.5 * i});
  const Series s = TrainedSamplesRate(steps, 10, "async");
  ASSERT_EQ(s.y.size(), 39u);
  for (double y : s.y) EXPECT_NEAR(y, 128 / 1.5, 1e-6);
  EXPECT_TRUE(TrainedSamplesRate({}, 10, "x").y.empty());
}

}  // namespace
}  // namespace rlvla3
