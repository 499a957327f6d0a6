// File: bench/mutex_deque_queue.h
// -----------------------------------------------------------------------------
// The baseline the benchmarks compare BoundedQueue against: the textbook
// bounded blocking queue, std::mutex + std::deque + two condition variables,
// with the same Push / PopBulk / Close interface (block policy only).
// -----------------------------------------------------------------------------
#ifndef RLVLA3_BENCH_MUTEX_DEQUE_QUEUE_H_
#define RLVLA3_BENCH_MUTEX_DEQUE_QUEUE_H_

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>

#include "absl/time/time.h"
#include "runtime/bounded_queue.h"

namespace rlvla3 {

template <typename T>
class MutexDequeQueue {
 public:
  explicit MutexDequeQueue(const QueueOptions& o) : capacity_(o.capacity) {}

  QueueStatus Push(T item) {
    std::unique_lock<std::mutex> lock(mu_);
    not_full_.wait(lock, [&] { return closed_ || items_.size() < capacity_; });
    if (closed_) return QueueStatus::kClosed;
    items_.push_back(std::move(item));
    not_empty_.notify_one();
    return QueueStatus::kOk;
  }

  QueueStatus PopBulk(T* out, size_t max_items, absl::Duration timeout,
                      size_t* popped) {
    *popped = 0;
    std::unique_lock<std::mutex> lock(mu_);
    auto ready = [&] { return closed_ || !items_.empty(); };
    if (timeout == absl::InfiniteDuration()) {
      not_empty_.wait(lock, ready);
    } else if (!not_empty_.wait_for(lock, absl::ToChronoNanoseconds(timeout),
                                    ready)) {
      return QueueStatus::kTimeout;
    }
    if (items_.empty()) return QueueStatus::kClosed;
    size_t n = 0;
    while (n < max_items && !items_.empty()) {
      out[n++] = std::move(items_.front());
      items_.pop_front();
    }
    *popped = n;
    not_full_.notify_all();
    return QueueStatus::kOk;
  }

  void Close() {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    not_full_.notify_all();
    not_empty_.notify_all();
  }

 private:
  const size_t capacity_;
  std::mutex mu_;
  std::condition_variable not_full_;
  std::condition_variable not_empty_;
  std::deque<T> items_;
  bool closed_ = false;
};

}  // namespace rlvla3

#endif  // RLVLA3_BENCH_MUTEX_DEQUE_QUEUE_H_
