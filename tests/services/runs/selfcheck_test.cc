#include "services/runs/selfcheck.h"

#include <gtest/gtest.h>

namespace rlvla3 {
namespace {

TEST(SelfCheck, EveryObservationGetsItsOwnReplyInDynamicBatches) {
  absl::StatusOr<Config> c =
      LoadConfig("", {"selfcheck.num_envs=12", "selfcheck.steps_per_env=40",
                      "selfcheck.env_step_ms=0.2", "batcher.max_batch=8",
                      "batcher.max_wait_ms=5", "threads.inference_actors=2",
                      "metrics.interval_s=0.05"});
  ASSERT_TRUE(c.ok()) << c.status();
  MetricsRegistry metrics;
  int ticks = 0;
  absl::StatusOr<SelfCheckReport> r =
      RunSelfCheck(SelfCheckOptionsFromConfig(*c), &metrics,
                   [&](const MetricsSnapshot&) { ++ticks; });
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->ok());
  EXPECT_EQ(r->observations, 12 * 40);
  EXPECT_EQ(r->replies, 12 * 40);
  EXPECT_EQ(r->mismatched_replies, 0);
  EXPECT_LE(r->max_batch_seen, 8);
  EXPECT_GT(r->mean_batch, 1.0);  // 12 envs, T_max 5 ms: batches do form
  EXPECT_EQ(r->codec_bytes, uint64_t(12 * 40 * 64 * 4));
  EXPECT_GE(ticks, 1);
  EXPECT_EQ(metrics.Snapshot().Get("env_frames"), 480.0);
}

}  // namespace
}  // namespace rlvla3
