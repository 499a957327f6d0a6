#include "runtime/bounded_queue.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

namespace rlvla3 {
namespace {

using Item = uint64_t;
constexpr int kProducerShift = 32;

Item MakeItem(int producer, uint64_t seq) {
  return (uint64_t(producer) << kProducerShift) | seq;
}

QueueOptions Opts(size_t capacity, OverflowPolicy p, size_t producers = 8) {
  QueueOptions o;
  o.capacity = capacity;
  o.overflow = p;
  o.max_producers = producers;
  return o;
}

// Many producers and consumers through a small queue: every item arrives once.
void RunMpmc(int producers, int consumers, size_t capacity,
             uint64_t per_producer, bool bulk) {
  BoundedQueue<Item> q(Opts(capacity, OverflowPolicy::kBlock, producers));
  std::vector<std::vector<uint8_t>> seen(producers,
                                         std::vector<uint8_t>(per_producer, 0));
  std::atomic<uint64_t> checksum_in{0}, checksum_out{0}, duplicates{0},
      popped{0};
  std::atomic<size_t> max_depth{0};
  std::vector<std::thread> threads;
  std::atomic<int> producers_left{producers};
  for (int p = 0; p < producers; ++p) {
    threads.emplace_back([&, p] {
      std::mt19937 rng(1234 + p);
      for (uint64_t i = 0; i < per_producer; ++i) {
        const Item it = MakeItem(p, i);
        ASSERT_EQ(q.Push(it), QueueStatus::kOk);
        checksum_in.fetch_add(it * 2654435761u, std::memory_order_relaxed);
        if (rng() % 64 == 0) std::this_thread::yield();
      }
      if (producers_left.fetch_sub(1) == 1) q.Close();
    });
  }
  // Consumers write `seen` for disjoint items only; a duplicate would show as
  // a 2.
  std::vector<std::vector<uint8_t>*> seen_ptrs;
  for (auto& v : seen) seen_ptrs.push_back(&v);
  std::vector<std::vector<Item>> got(consumers);
  for (int c = 0; c < consumers; ++c) {
    threads.emplace_back([&, c] {
      Item buf[16];
      for (;;) {
        size_t n = 0;
        QueueStatus s = bulk ? q.PopBulk(buf, 16, absl::Seconds(5), &n)
                             : (n = 1, q.Pop(buf[0], absl::Seconds(5)));
        if (s == QueueStatus::kClosed) return;
        ASSERT_EQ(s, QueueStatus::kOk);
        size_t d = q.depth();
        size_t m = max_depth.load();
        while (d > m && !max_depth.compare_exchange_weak(m, d)) {
        }
        for (size_t i = 0; i < n; ++i) got[c].push_back(buf[i]);
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& g : got) {
    for (Item it : g) {
      const int p = static_cast<int>(it >> kProducerShift);
      const uint64_t seq = it & ((uint64_t(1) << kProducerShift) - 1);
      ASSERT_LT(p, producers);
      ASSERT_LT(seq, per_producer);
      if (seen[p][seq]++) duplicates.fetch_add(1);
      checksum_out.fetch_add(it * 2654435761u);
      popped.fetch_add(1);
    }
  }
  EXPECT_EQ(duplicates.load(), 0u);
  EXPECT_EQ(popped.load(), producers * per_producer);
  EXPECT_EQ(checksum_in.load(), checksum_out.load());
  for (int p = 0; p < producers; ++p) {
    EXPECT_EQ(std::count(seen[p].begin(), seen[p].end(), 1),
              static_cast<long>(per_producer))
        << "producer " << p << " lost items";
  }
  EXPECT_LE(max_depth.load(), capacity);
  const QueueStats s = q.stats();
  EXPECT_EQ(s.pushed, producers * per_producer);
  EXPECT_EQ(s.popped, producers * per_producer);
  EXPECT_EQ(s.dropped, 0u);
  EXPECT_EQ(s.depth, 0u);
  EXPECT_EQ(s.storage_allocations, 0u);
}

TEST(BoundedQueueStress, FourProducersFourConsumersNoLossNoDuplicate) {
  RunMpmc(4, 4, 8, 20000, /*bulk=*/false);
}

TEST(BoundedQueueStress, BulkPopEightProducersTwoConsumers) {
  RunMpmc(8, 2, 64, 10000, /*bulk=*/true);
}

TEST(BoundedQueueStress, CapacityOneManyThreads) {
  RunMpmc(3, 3, 1, 5000, false);
}

TEST(BoundedQueue, BackpressureBlocksAtCapacityAndNeverGrows) {
  BoundedQueue<int> q(Opts(4, OverflowPolicy::kBlock));
  for (int i = 0; i < 4; ++i) ASSERT_EQ(q.Push(i), QueueStatus::kOk);
  EXPECT_EQ(q.depth(), 4u);
  EXPECT_EQ(q.Push(99, absl::Milliseconds(20)), QueueStatus::kTimeout);
  EXPECT_EQ(q.depth(), 4u);
  EXPECT_GT(q.stats().producer_wait_ns, 0u);
  // A blocked producer proceeds as soon as a consumer frees a slot.
  std::atomic<bool> pushed{false};
  std::thread producer([&] {
    EXPECT_EQ(q.Push(5), QueueStatus::kOk);
    pushed = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(pushed.load());
  int v = -1;
  ASSERT_EQ(q.Pop(v), QueueStatus::kOk);
  EXPECT_EQ(v, 0);
  producer.join();
  EXPECT_TRUE(pushed.load());
  EXPECT_EQ(q.depth(), 4u);
  // FIFO holds per producer only: 5 came from another thread.
  std::vector<int> rest;
  while (q.Pop(v, absl::ZeroDuration()) == QueueStatus::kOk) rest.push_back(v);
  std::sort(rest.begin(), rest.end());
  EXPECT_EQ(rest, (std::vector<int>{1, 2, 3, 5}));
  EXPECT_EQ(q.stats().storage_allocations, 0u);
}

TEST(BoundedQueue, RejectPolicyReturnsFullAndCounts) {
  BoundedQueue<int> q(Opts(2, OverflowPolicy::kReject));
  EXPECT_EQ(q.Push(1), QueueStatus::kOk);
  EXPECT_EQ(q.Push(2), QueueStatus::kOk);
  EXPECT_EQ(q.Push(3), QueueStatus::kFull);
  EXPECT_EQ(q.Push(4), QueueStatus::kFull);
  EXPECT_EQ(q.stats().rejected, 2u);
  EXPECT_EQ(q.depth(), 2u);
}

TEST(BoundedQueue, DropOldestKeepsNewestItems) {
  BoundedQueue<int> q(Opts(4, OverflowPolicy::kDropOldest));
  for (int i = 0; i < 10; ++i) ASSERT_EQ(q.Push(i), QueueStatus::kOk);
  EXPECT_EQ(q.stats().dropped, 6u);
  EXPECT_EQ(q.depth(), 4u);
  int v;
  for (int want = 6; want < 10; ++want) {
    ASSERT_EQ(q.Pop(v, absl::ZeroDuration()), QueueStatus::kOk);
    EXPECT_EQ(v, want);
  }
}

TEST(BoundedQueueStress, DropOldestAccountsForEveryItem) {
  constexpr int kProducers = 4;
  constexpr int kPerProducer = 20000;
  BoundedQueue<Item> q(Opts(16, OverflowPolicy::kDropOldest, kProducers));
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&, p] {
      for (int i = 0; i < kPerProducer; ++i)
        ASSERT_EQ(q.Push(MakeItem(p, i)), QueueStatus::kOk);
    });
  }
  std::vector<Item> got;
  std::thread consumer([&] {
    Item it;
    while (q.Pop(it, absl::Seconds(5)) == QueueStatus::kOk) got.push_back(it);
  });
  for (auto& t : producers) t.join();
  q.Close();
  consumer.join();
  const QueueStats s = q.stats();
  EXPECT_EQ(s.pushed, uint64_t(kProducers) * kPerProducer);
  EXPECT_EQ(s.popped + s.dropped, s.pushed);
  EXPECT_EQ(got.size(), s.popped);
  std::sort(got.begin(), got.end());
  EXPECT_EQ(std::adjacent_find(got.begin(), got.end()), got.end())
      << "duplicate item";
}

TEST(BoundedQueue, CloseWakesBlockedConsumers) {
  BoundedQueue<int> q(Opts(4, OverflowPolicy::kBlock));
  std::vector<std::thread> consumers;
  std::atomic<int> closed{0};
  for (int i = 0; i < 4; ++i) {
    consumers.emplace_back([&] {
      int v;
      if (q.Pop(v) == QueueStatus::kClosed) closed.fetch_add(1);
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(closed.load(), 0);
  q.Close();
  for (auto& t : consumers) t.join();
  EXPECT_EQ(closed.load(), 4);
}

TEST(BoundedQueue, CloseWakesBlockedProducers) {
  BoundedQueue<int> q(Opts(1, OverflowPolicy::kBlock));
  ASSERT_EQ(q.Push(0), QueueStatus::kOk);
  std::vector<std::thread> producers;
  std::atomic<int> closed{0};
  for (int i = 0; i < 4; ++i) {
    producers.emplace_back([&, i] {
      if (q.Push(i + 1) == QueueStatus::kClosed) closed.fetch_add(1);
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  q.Close();
  for (auto& t : producers) t.join();
  EXPECT_EQ(closed.load(), 4);
  // The item accepted before Close() is still delivered, then kClosed.
  int v = -1;
  EXPECT_EQ(q.Pop(v), QueueStatus::kOk);
  EXPECT_EQ(v, 0);
  EXPECT_EQ(q.Pop(v), QueueStatus::kClosed);
}

TEST(BoundedQueue, DrainsAcceptedItemsAfterClose) {
  BoundedQueue<int> q(Opts(8, OverflowPolicy::kBlock));
  for (int i = 0; i < 3; ++i) ASSERT_EQ(q.Push(i), QueueStatus::kOk);
  q.Close();
  EXPECT_EQ(q.Push(7), QueueStatus::kClosed);
  int buf[8];
  size_t n = 0;
  EXPECT_EQ(q.PopBulk(buf, 8, absl::Seconds(1), &n), QueueStatus::kOk);
  EXPECT_EQ(n, 3u);
  EXPECT_EQ(q.PopBulk(buf, 8, absl::Seconds(1), &n), QueueStatus::kClosed);
  EXPECT_EQ(n, 0u);
}

TEST(BoundedQueue, TimedPopOnEmptyTimesOut) {
  BoundedQueue<int> q(Opts(8, OverflowPolicy::kBlock));
  int v;
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(q.Pop(v, absl::Milliseconds(15)), QueueStatus::kTimeout);
  EXPECT_GE(std::chrono::steady_clock::now() - t0,
            std::chrono::milliseconds(14));
  EXPECT_GT(q.stats().consumer_wait_ns, 0u);
}

TEST(BoundedQueue, PopBulkReturnsOnlyWhatIsReady) {
  BoundedQueue<int> q(Opts(64, OverflowPolicy::kBlock));
  for (int i = 0; i < 5; ++i) ASSERT_EQ(q.Push(i), QueueStatus::kOk);
  int buf[32];
  size_t n = 0;
  EXPECT_EQ(q.PopBulk(buf, 32, absl::Seconds(1), &n), QueueStatus::kOk);
  EXPECT_EQ(n, 5u);
  EXPECT_EQ(q.PopBulk(buf, 32, absl::Milliseconds(1), &n),
            QueueStatus::kTimeout);
}

TEST(BoundedQueueStress, CloseDuringTrafficLosesNothingAccepted) {
  // Producers push until Close() refuses them; whatever was accepted must come
  // out.
  for (int round = 0; round < 20; ++round) {
    BoundedQueue<Item> q(Opts(8, OverflowPolicy::kBlock, 4));
    std::atomic<uint64_t> accepted{0};
    std::vector<std::thread> producers;
    for (int p = 0; p < 4; ++p) {
      producers.emplace_back([&, p] {
        for (uint64_t i = 0;; ++i) {
          if (q.Push(MakeItem(p, i)) != QueueStatus::kOk) return;
          accepted.fetch_add(1);
        }
      });
    }
    std::atomic<uint64_t> popped{0};
    std::thread consumer([&] {
      Item buf[4];
      size_t n;
      while (q.PopBulk(buf, 4, absl::Seconds(5), &n) == QueueStatus::kOk)
        popped.fetch_add(n);
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(2 + round % 3));
    q.Close();
    for (auto& t : producers) t.join();
    consumer.join();
    ASSERT_EQ(popped.load(), accepted.load()) << "round " << round;
  }
}

TEST(QueueNames, AreStable) {
  EXPECT_EQ(OverflowPolicyName(OverflowPolicy::kDropOldest), "drop_oldest");
  EXPECT_EQ(QueueStatusName(QueueStatus::kClosed), "closed");
}

}  // namespace
}  // namespace rlvla3
