// The in-process channels with real threads: every observation gets exactly
// its own reply, no segment is lost or duplicated, weight subscribers hear
// every version and readers always see the latest.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "runtime/channels/observation_channel.h"
#include "runtime/channels/segment_channel.h"
#include "runtime/channels/weight_channel.h"
#include "runtime/dynamic_batcher.h"

namespace rlvla3 {
namespace {

TEST(LocalObservationChannel, EveryRequestGetsItsOwnReplyUnderConcurrency) {
  constexpr int kEnvs = 16, kRounds = 500;
  LocalObservationChannel ch(QueueOptions{64, OverflowPolicy::kBlock, 8});
  std::vector<std::atomic<int>> replies(kEnvs);
  std::vector<std::atomic<int>> in_flight(kEnvs);
  std::atomic<int> mismatches{0};
  ch.SetReplyHandler([&](absl::Span<const ActionReply> r) {
    for (const ActionReply& a : r) {
      // The reply carries what the inference side read from the request.
      if (a.value != static_cast<float>(a.env)) mismatches.fetch_add(1);
      if (in_flight[a.env].fetch_sub(1) != 1) mismatches.fetch_add(1);
      replies[a.env].fetch_add(1);
    }
    return absl::OkStatus();
  });
  std::thread server([&] {
    DynamicBatcher<ObservationRequest> batcher(
        &ch.requests(),
        BatcherOptions{8, absl::Microseconds(200), absl::Milliseconds(5)});
    std::vector<ObservationRequest> batch;
    std::vector<ActionReply> out;
    while (batcher.NextBatch(batch) != QueueStatus::kClosed) {
      out.clear();
      for (const ObservationRequest& r : batch) {
        ActionReply a;
        a.env = r.env;
        a.value = r.proprio[0];
        out.push_back(a);
      }
      ASSERT_TRUE(ch.Reply(out).ok());
    }
  });
  std::vector<std::thread> envs;
  std::vector<float> proprio(kEnvs);
  for (int e = 0; e < kEnvs; ++e) {
    proprio[e] = static_cast<float>(e);
    envs.emplace_back([&, e] {
      for (int i = 0; i < kRounds; ++i) {
        while (in_flight[e].load() != 0) std::this_thread::yield();
        in_flight[e].store(1);
        ObservationRequest r;
        r.env = e;
        r.proprio = &proprio[e];
        ASSERT_TRUE(ch.Submit(r).ok());
      }
    });
  }
  for (auto& t : envs) t.join();
  for (int e = 0; e < kEnvs; ++e) {
    while (in_flight[e].load() != 0) std::this_thread::yield();
  }
  ch.Close();
  server.join();
  EXPECT_EQ(mismatches.load(), 0);
  for (int e = 0; e < kEnvs; ++e) EXPECT_EQ(replies[e].load(), kRounds);
  // Closed: a submission fails instead of waiting forever.
  EXPECT_FALSE(ch.Submit(ObservationRequest{}).ok());
}

TEST(LocalSegmentChannel, NoSegmentIsLostOrDuplicatedUnderConcurrency) {
  constexpr int kProducers = 4, kPerProducer = 300;
  SegmentShape shape;
  shape.width = shape.height = 4;
  shape.capacity = 2;
  LocalSegmentChannel ch(shape, /*count=*/8,
                         QueueOptions{4, OverflowPolicy::kBlock, 8});
  std::vector<std::atomic<int>> seen(kProducers * kPerProducer);
  std::thread learner([&] {
    RolloutSegment* buf[4];
    int got = 0;
    while (got < kProducers * kPerProducer) {
      size_t n = 0;
      ch.PopBulk(buf, 4, absl::Milliseconds(20), &n);
      for (size_t i = 0; i < n; ++i) {
        seen[buf[i]->index].fetch_add(1);
        ch.Release(buf[i]);  // the pool is small: producers need these back
      }
      got += static_cast<int>(n);
    }
  });
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&, p] {
      for (int i = 0; i < kPerProducer; ++i) {
        RolloutSegment* s = ch.Acquire();
        ASSERT_NE(s, nullptr);
        EXPECT_EQ(s->n, 0);  // cleared on acquire
        s->n = 1;
        s->index = p * kPerProducer + i;
        ASSERT_TRUE(ch.Push(s).ok());
      }
    });
  }
  for (auto& t : producers) t.join();
  learner.join();
  for (size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i].load(), 1) << i;
  ch.Close();
  // Closed: a push fails (and gives the segment back) instead of blocking.
  RolloutSegment* s = ch.Acquire();
  ASSERT_NE(s, nullptr);
  EXPECT_FALSE(ch.Push(s).ok());
}

TEST(LocalWeightChannel, SubscribersHearEveryVersionReadersSeeTheLatest) {
  LocalWeightChannel<int> ch;
  std::vector<uint64_t> heard;
  ch.Subscribe([&](uint64_t v) { heard.push_back(v); });
  std::atomic<bool> stop{false};
  std::atomic<int> backwards{0};
  std::thread reader([&] {
    uint64_t last = 0;
    while (!stop.load()) {
      WeightChannel<int>::Entry e = ch.Latest();
      if (e.value == nullptr) continue;
      if (e.version < last || *e.value != static_cast<int>(e.version))
        backwards.fetch_add(1);
      last = e.version;
    }
  });
  for (uint64_t v = 1; v <= 2000; ++v)
    ch.Publish(std::make_shared<int>(static_cast<int>(v)), v);
  stop.store(true);
  reader.join();
  EXPECT_EQ(backwards.load(), 0);
  ASSERT_EQ(heard.size(), 2000u);
  for (size_t i = 0; i < heard.size(); ++i) EXPECT_EQ(heard[i], i + 1);
  EXPECT_EQ(ch.version(), 2000u);
  EXPECT_EQ(*ch.Latest().value, 2000);
}

}  // namespace
}  // namespace rlvla3
