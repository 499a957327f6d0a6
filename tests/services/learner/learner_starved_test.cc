// The learner role starved: its batch short of units that were lost on the
// way, no segment arriving. It counts the starvation once per
// rl.starved_after_s and says so (its hook, the rollout workers' heartbeat
// replies), so that the workers admit one more quota; a learner that keeps
// training is never starved, and 0 turns it off.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include "policies/tiny_vla_policy.h"
#include "runtime/channels/segment_channel.h"
#include "runtime/channels/weight_channel.h"
#include "services/learner/learner.h"
#include "tests/services/learner/learner_fixture.h"

namespace rlvla3 {
namespace {

class StarvedLearner : public testutil::LearnerTest {
 protected:
  // A learner role over a local segment channel; a batch is 8 decisions.
  std::unique_ptr<Learner> Make(absl::Duration starved_after) {
    LearnerRoleOptions o;
    o.core = options_;
    o.text = text_;
    o.text_len = lens_;
    o.starved_after = starved_after;
    return std::make_unique<Learner>(Wrap(TinyVLA(testutil::SmallNet())), o,
                                     /*version=*/0, &channel_, &weights_,
                                     &metrics_, &timeline_);
  }
  // Pushes one segment of 4 decisions of behaviour version 0.
  void PushHalfABatch(uint32_t seed) {
    RolloutSegment* s = channel_.Acquire();
    testutil::Fill(s, 4, /*version=*/0, seed);
    ASSERT_TRUE(channel_.Push(s).ok());
  }
  LocalSegmentChannel channel_{testutil::SmallShape(), 8, QueueOptions{}};
  LocalWeightChannel<Policy> weights_;
  MetricsRegistry metrics_;
  StageTimeline timeline_{false};
};

bool WaitFor(const std::function<bool()>& done, double seconds) {
  const auto end =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!done() && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done();
}

TEST_F(StarvedLearner, AShortBatchWithNothingArrivingCountsOncePerInterval) {
  std::unique_ptr<Learner> learner = Make(absl::Milliseconds(300));
  std::atomic<uint64_t> heard{0};
  learner->SetStarvedHook([&](uint64_t n) { heard.store(n); });
  learner->Start([&] { channel_.Close(); }, nullptr);
  PushHalfABatch(1);  // 4 of the 8 units: the other half was lost
  EXPECT_TRUE(WaitFor([&] { return heard.load() >= 1; }, 10));
  // Once per interval, not once per loop (the loop polls every 20 ms).
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  EXPECT_LE(learner->starved(), 3u);
  // The units the workers admitted then arrive: the batch steps.
  PushHalfABatch(2);
  EXPECT_TRUE(WaitFor([&] { return learner->version() == 1; }, 30));
  learner->Stop();
  EXPECT_TRUE(learner->Wait().ok());
  EXPECT_EQ(heard.load(), learner->starved());
  EXPECT_EQ(metrics_.counter("learner_starved").value(), learner->starved());
}

TEST_F(StarvedLearner, ALearnerFedInTimeIsNeverStarved) {
  std::unique_ptr<Learner> learner = Make(absl::Seconds(5));
  learner->Start([&] { channel_.Close(); }, nullptr);
  PushHalfABatch(3);
  PushHalfABatch(4);
  EXPECT_TRUE(WaitFor([&] { return learner->version() == 1; }, 30));
  EXPECT_EQ(learner->starved(), 0u);
  learner->Stop();
  EXPECT_TRUE(learner->Wait().ok());
}

TEST_F(StarvedLearner, ZeroTurnsTheCountOff) {
  std::unique_ptr<Learner> learner = Make(absl::ZeroDuration());
  learner->Start([&] { channel_.Close(); }, nullptr);
  PushHalfABatch(5);  // short, and waits for ever: never counted
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(learner->starved(), 0u);
  learner->Stop();
  EXPECT_TRUE(learner->Wait().ok());
}

}  // namespace
}  // namespace rlvla3
