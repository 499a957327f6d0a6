#include "runtime/dynamic_batcher.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace rlvla3 {
namespace {

using Clock = std::chrono::steady_clock;

QueueOptions Qopts(size_t capacity, size_t producers = 8) {
  QueueOptions o;
  o.capacity = capacity;
  o.max_producers = producers;
  return o;
}

BatcherOptions Bopts(size_t max_batch, absl::Duration max_wait,
                     absl::Duration idle = absl::Milliseconds(50)) {
  BatcherOptions o;
  o.max_batch = max_batch;
  o.max_wait = max_wait;
  o.idle_poll = idle;
  return o;
}

TEST(DynamicBatcher, FiresAtMaxBatchWithoutWaitingForTmax) {
  BoundedQueue<int> q(Qopts(256));
  for (int i = 0; i < 40; ++i) ASSERT_EQ(q.Push(i), QueueStatus::kOk);
  DynamicBatcher<int> b(&q, Bopts(16, absl::Seconds(10)));
  std::vector<int> batch;
  const auto t0 = Clock::now();
  ASSERT_EQ(b.NextBatch(batch), QueueStatus::kOk);
  // T_max is 10 s: returning at all before it means the batch fired at B_max.
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(5));
  ASSERT_EQ(batch.size(), 16u);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(batch[i], i);
  EXPECT_EQ(b.stats().full_batches, 1u);
}

TEST(DynamicBatcher, FiresAtTmaxWithAPartialBatch) {
  BoundedQueue<int> q(Qopts(256));
  for (int i = 0; i < 3; ++i) ASSERT_EQ(q.Push(i), QueueStatus::kOk);
  DynamicBatcher<int> b(&q, Bopts(16, absl::Milliseconds(30)));
  std::vector<int> batch;
  const auto t0 = Clock::now();
  ASSERT_EQ(b.NextBatch(batch), QueueStatus::kOk);
  EXPECT_GE(Clock::now() - t0, std::chrono::milliseconds(29));
  EXPECT_EQ(batch.size(), 3u);
  const BatcherStats s = b.stats();
  EXPECT_EQ(s.timed_batches, 1u);
  EXPECT_EQ(s.batch_size.count, 1u);
  EXPECT_EQ(s.batch_size.max, 3.0);
}

TEST(DynamicBatcher, CollectsItemsArrivingWithinTmax) {
  BoundedQueue<int> q(Qopts(256));
  DynamicBatcher<int> b(&q, Bopts(6, absl::Seconds(10)));
  std::thread producer([&] {
    ASSERT_EQ(q.Push(0), QueueStatus::kOk);
    for (int i = 1; i < 6; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(3));
      ASSERT_EQ(q.Push(i), QueueStatus::kOk);
    }
  });
  std::vector<int> batch;
  ASSERT_EQ(b.NextBatch(batch), QueueStatus::kOk);
  producer.join();
  EXPECT_EQ(batch, (std::vector<int>{0, 1, 2, 3, 4, 5}));
}

TEST(DynamicBatcher, IdleQueueTimesOutAndClosedQueueReportsClosed) {
  BoundedQueue<int> q(Qopts(8));
  DynamicBatcher<int> b(&q,
                        Bopts(4, absl::Milliseconds(1), absl::Milliseconds(5)));
  std::vector<int> batch;
  EXPECT_EQ(b.NextBatch(batch), QueueStatus::kTimeout);
  EXPECT_TRUE(batch.empty());
  ASSERT_EQ(q.Push(1), QueueStatus::kOk);
  q.Close();
  EXPECT_EQ(b.NextBatch(batch), QueueStatus::kOk);
  EXPECT_EQ(batch, std::vector<int>{1});
  EXPECT_EQ(b.NextBatch(batch), QueueStatus::kClosed);
}

TEST(DynamicBatcherStress, ManyProducersSeveralActorsEveryItemOnce) {
  constexpr int kProducers = 6;
  constexpr int kPerProducer = 5000;
  constexpr int kActors = 3;
  constexpr size_t kMaxBatch = 32;
  BoundedQueue<int> q(Qopts(64, kProducers));
  DynamicBatcher<int> b(&q, Bopts(kMaxBatch, absl::Microseconds(200)));
  std::vector<std::thread> threads;
  for (int p = 0; p < kProducers; ++p) {
    threads.emplace_back([&, p] {
      for (int i = 0; i < kPerProducer; ++i)
        ASSERT_EQ(q.Push(p * kPerProducer + i), QueueStatus::kOk);
    });
  }
  std::vector<std::vector<int>> got(kActors);
  std::atomic<size_t> oversized{0};
  std::vector<std::thread> actors;
  for (int a = 0; a < kActors; ++a) {
    actors.emplace_back([&, a] {
      std::vector<int> batch;
      for (;;) {
        QueueStatus s = b.NextBatch(batch);
        if (s == QueueStatus::kClosed) return;
        if (s != QueueStatus::kOk) continue;
        if (batch.empty() || batch.size() > kMaxBatch) oversized.fetch_add(1);
        got[a].insert(got[a].end(), batch.begin(), batch.end());
      }
    });
  }
  for (auto& t : threads) t.join();
  q.Close();
  for (auto& t : actors) t.join();
  std::vector<int> all;
  for (auto& g : got) all.insert(all.end(), g.begin(), g.end());
  std::sort(all.begin(), all.end());
  ASSERT_EQ(all.size(), size_t(kProducers) * kPerProducer);
  for (size_t i = 0; i < all.size(); ++i)
    ASSERT_EQ(all[i], static_cast<int>(i));
  EXPECT_EQ(oversized.load(), 0u);
  const BatcherStats s = b.stats();
  EXPECT_EQ(s.items, all.size());
  EXPECT_EQ(s.batch_size.count, s.batches);
  EXPECT_LE(s.batch_size.max, double(kMaxBatch));
}

}  // namespace
}  // namespace rlvla3
