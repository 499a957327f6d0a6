// File: runtime/dynamic_batcher.h
// -----------------------------------------------------------------------------
// DynamicBatcher: forms inference batches from a request queue, SEED-RL style.
// NextBatch() waits for a first item, then returns as soon as it holds
// `max_batch` items (B_max) or `max_wait` (T_max) has passed since that first
// item arrived, whichever comes first. It never waits for items beyond T_max,
// so a lone env is served within T_max. Several actors may call NextBatch on
// one queue concurrently (each gets its own batch).
//
// The queue type is a template parameter so benchmarks can compare queues; it
// needs PopBulk(T*, size_t, absl::Duration, size_t*) -> QueueStatus.
//
// Example:
//   BoundedQueue<Request> requests(queue_options);
//   DynamicBatcher<Request> batcher(&requests, {.max_batch = 64,
//                                               .max_wait =
//                                               absl::Milliseconds(2)});
//   std::vector<Request> batch;
//   while (batcher.NextBatch(batch) != QueueStatus::kClosed) Infer(batch);
// -----------------------------------------------------------------------------
#ifndef RLVLA3_RUNTIME_DYNAMIC_BATCHER_H_
#define RLVLA3_RUNTIME_DYNAMIC_BATCHER_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "runtime/bounded_queue.h"
#include "runtime/metrics.h"

namespace rlvla3 {

struct BatcherOptions {
  size_t max_batch = 32;  // B_max, >= 1
  absl::Duration max_wait =
      absl::Milliseconds(2);  // T_max after the first item
  // How long NextBatch waits for a first item before returning kTimeout, so the
  // caller can do housekeeping (e.g. swap weights) between batches.
  absl::Duration idle_poll = absl::Milliseconds(50);
};

// Batch-size histogram and wait times, shared by all callers of one batcher.
struct BatcherStats {
  uint64_t batches = 0;
  uint64_t items = 0;
  uint64_t full_batches = 0;     // fired at B_max
  uint64_t timed_batches = 0;    // fired at T_max
  uint64_t fill_wait_ns = 0;     // summed time from first item to firing
  HistogramSnapshot batch_size;  // distribution of batch sizes
};

template <typename T, typename Queue = BoundedQueue<T>>
class DynamicBatcher {
 public:
  DynamicBatcher(Queue* queue, const BatcherOptions& options)
      : queue_(queue),
        options_(options),
        batch_size_(options.max_batch <= kExactBuckets
                        ? Histogram::Linear(1.0, 1.0, options.max_batch)
                        : Histogram::Exponential(1.0, 2.0, 16)) {}

  // Fills `batch` (cleared first; its capacity is reused) with 1..max_batch
  // items. Returns kOk with a batch, kTimeout when no first item came within
  // idle_poll, or kClosed when the queue is closed and drained.
  QueueStatus NextBatch(std::vector<T>& batch) {
    batch.resize(options_.max_batch);
    size_t n = 0;
    QueueStatus s = queue_->PopBulk(batch.data(), options_.max_batch,
                                    options_.idle_poll, &n);
    if (s != QueueStatus::kOk) {
      batch.clear();
      return s;
    }
    const auto first = std::chrono::steady_clock::now();
    const auto deadline =
        first +
        std::chrono::nanoseconds(absl::ToInt64Nanoseconds(options_.max_wait));
    while (n < options_.max_batch) {
      const auto now = std::chrono::steady_clock::now();
      if (now >= deadline) break;
      size_t got = 0;
      s = queue_->PopBulk(batch.data() + n, options_.max_batch - n,
                          absl::FromChrono(deadline - now), &got);
      n += got;
      if (s == QueueStatus::kClosed) break;
    }
    batch.resize(n);
    Record(n, first);
    return QueueStatus::kOk;
  }

  const BatcherOptions& options() const { return options_; }

  BatcherStats stats() const {
    BatcherStats s;
    s.batches = batches_.load(std::memory_order_relaxed);
    s.items = items_.load(std::memory_order_relaxed);
    s.full_batches = full_batches_.load(std::memory_order_relaxed);
    s.timed_batches = s.batches - s.full_batches;
    s.fill_wait_ns = fill_wait_ns_.load(std::memory_order_relaxed);
    s.batch_size = batch_size_.Snapshot();
    return s;
  }

 private:
  static constexpr size_t kExactBuckets =
      256;  // one bucket per size up to this

  void Record(size_t n, std::chrono::steady_clock::time_point first) {
    const auto waited = std::chrono::steady_clock::now() - first;
    fill_wait_ns_.fetch_add(
        static_cast<uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(waited)
                .count()),
        std::memory_order_relaxed);
    batches_.fetch_add(1, std::memory_order_relaxed);
    items_.fetch_add(n, std::memory_order_relaxed);
    if (n == options_.max_batch)
      full_batches_.fetch_add(1, std::memory_order_relaxed);
    batch_size_.Observe(static_cast<double>(n));
  }

  Queue* const queue_;
  const BatcherOptions options_;
  Histogram batch_size_;
  std::atomic<uint64_t> batches_{0};
  std::atomic<uint64_t> items_{0};
  std::atomic<uint64_t> full_batches_{0};
  std::atomic<uint64_t> fill_wait_ns_{0};
};

}  // namespace rlvla3

#endif  // RLVLA3_RUNTIME_DYNAMIC_BATCHER_H_
