// Queue and dynamic-batcher benchmarks: rl-vla3's BoundedQueue (moodycamel +
// semaphores) against a std::mutex + std::deque baseline, in the same run.
//
//   build/bench/queue_benchmark --benchmark_counters_tabular=true
//
// BM_Queue<Q>/P: P producer threads push kItems items in total through a
// queue of capacity 1024 to one consumer (bulk pops of up to 64).
// BM_BatcherLatency<Q>/B: one producer pushes bursts of B timestamped items;
// a DynamicBatcher (B_max = B, T_max = 1 ms) forms batches; the counters give
// the mean and p99 time from push to the batch being handed to inference.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "bench/mutex_deque_queue.h"
#include "runtime/bounded_queue.h"
#include "runtime/dynamic_batcher.h"

namespace rlvla3 {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int64_t kItems = 200000;
constexpr size_t kCapacity = 1024;
constexpr size_t kPopBulk = 64;

QueueOptions Options(size_t producers, int spin) {
  QueueOptions o;
  o.spin_before_sleep = spin;
  o.capacity = kCapacity;
  o.overflow = OverflowPolicy::kBlock;
  o.max_producers = producers + 2;
  return o;
}

template <typename Q>
void BM_Queue(benchmark::State& state) {
  const int producers = static_cast<int>(state.range(0));
  const int spin = static_cast<int>(state.range(1));
  for (auto _ : state) {
    Q q(Options(static_cast<size_t>(producers), spin));
    std::vector<std::thread> threads;
    const int64_t per = kItems / producers;
    for (int p = 0; p < producers; ++p) {
      threads.emplace_back([&q, per, p] {
        for (int64_t i = 0; i < per; ++i)
          q.Push(static_cast<uint64_t>(p) << 40 | i);
      });
    }
    uint64_t buf[kPopBulk];
    uint64_t sum = 0;
    int64_t got = 0;
    while (got < per * producers) {
      size_t n = 0;
      q.PopBulk(buf, kPopBulk, absl::Seconds(10), &n);
      for (size_t i = 0; i < n; ++i) sum += buf[i];
      got += static_cast<int64_t>(n);
    }
    benchmark::DoNotOptimize(sum);
    for (auto& t : threads) t.join();
  }
  state.SetItemsProcessed(state.iterations() * (kItems / producers) *
                          producers);
}

struct Stamped {
  Clock::time_point pushed;
};

template <typename Q>
void BM_BatcherLatency(benchmark::State& state) {
  const size_t b_max = static_cast<size_t>(state.range(0));
  const int spin = static_cast<int>(state.range(1));
  constexpr int kBursts = 400;
  std::vector<double> latencies_us;
  latencies_us.reserve(kBursts * b_max);
  for (auto _ : state) {
    Q q(Options(1, spin));
    BatcherOptions bo;
    bo.max_batch = b_max;
    bo.max_wait = absl::Milliseconds(1);
    DynamicBatcher<Stamped, Q> batcher(&q, bo);
    std::atomic<int> consumed_bursts{0};
    std::thread producer([&] {
      for (int b = 0; b < kBursts; ++b) {
        for (size_t i = 0; i < b_max; ++i) q.Push(Stamped{Clock::now()});
        // Closed loop: the next burst comes after this one was served.
        while (consumed_bursts.load(std::memory_order_acquire) <= b)
          std::this_thread::yield();
      }
      q.Close();
    });
    std::vector<Stamped> batch;
    size_t in_burst = 0;
    while (batcher.NextBatch(batch) != QueueStatus::kClosed) {
      const auto now = Clock::now();
      for (const auto& s : batch) {
        latencies_us.push_back(
            std::chrono::duration<double, std::micro>(now - s.pushed).count());
      }
      in_burst += batch.size();
      if (in_burst >= b_max) {
        in_burst = 0;
        consumed_bursts.fetch_add(1, std::memory_order_release);
      }
    }
    producer.join();
  }
  std::sort(latencies_us.begin(), latencies_us.end());
  double sum = 0;
  for (double v : latencies_us) sum += v;
  state.counters["lat_mean_us"] =
      latencies_us.empty() ? 0 : sum / latencies_us.size();
  state.counters["lat_p99_us"] =
      latencies_us.empty() ? 0 : latencies_us[latencies_us.size() * 99 / 100];
  state.SetItemsProcessed(static_cast<int64_t>(latencies_us.size()));
}

// Args: {producers or B_max, semaphore spins before sleeping (BoundedQueue
// only)}.
BENCHMARK_TEMPLATE(BM_Queue, BoundedQueue<uint64_t>)
    ->ArgsProduct({{1, 4}, {0, 100, 10000}})
    ->ArgNames({"producers", "spin"})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(BM_Queue, MutexDequeQueue<uint64_t>)
    ->ArgsProduct({{1, 4}, {0}})
    ->ArgNames({"producers", "spin"})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(BM_BatcherLatency, BoundedQueue<Stamped>)
    ->ArgsProduct({{1, 16, 64}, {0, 100, 10000}})
    ->ArgNames({"b_max", "spin"})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(BM_BatcherLatency, MutexDequeQueue<Stamped>)
    ->ArgsProduct({{1, 16, 64}, {0}})
    ->ArgNames({"b_max", "spin"})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace rlvla3

BENCHMARK_MAIN();
