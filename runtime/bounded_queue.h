// File: runtime/bounded_queue.h
// -----------------------------------------------------------------------------
// BoundedQueue<T>: the multi-producer multi-consumer queue behind every level
// of rl-vla3 (observation requests, trajectory segments). Storage is a
// moodycamel ConcurrentQueue preallocated for `capacity` items; a pair of
// lightweight semaphores (free slots, ready items) make the bound exact and
// give blocking, timed waits. A full queue never allocates and never grows:
// what happens when it is full is the named OverflowPolicy.
//
// Ordering: FIFO per producer thread, not across producers (moodycamel is not
// linearizable). kDropOldest therefore drops the oldest item of some producer.
//
// Shutdown: Close() wakes every waiter. Pushes after Close() return kClosed;
// pops keep draining what was accepted and return kClosed once it is empty, so
// every item whose Push returned kOk is popped exactly once or is still queued.
//
// Example:
//   BoundedQueue<Request> q({.capacity = 256, .overflow =
//   OverflowPolicy::kBlock}); q.Push(Request{...});                       //
//   producer thread(s) Request r; if (q.Pop(r, absl::Milliseconds(5)) ==
//   QueueStatus::kOk) Use(r); q.Close();                                  //
//   wakes everyone
// -----------------------------------------------------------------------------
#ifndef RLVLA3_RUNTIME_BOUNDED_QUEUE_H_
#define RLVLA3_RUNTIME_BOUNDED_QUEUE_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <utility>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "concurrentqueue/concurrentqueue.h"
#include "concurrentqueue/lightweightsemaphore.h"
#include "runtime/enum_names.h"

namespace rlvla3 {

// What Push does when the queue holds `capacity` items.
enum class OverflowPolicy {
  kBlock,       // wait for a free slot (until the timeout, if one is given)
  kDropOldest,  // evict one queued item (counted as dropped), then enqueue
  kReject,      // return kFull at once (counted as rejected)
};

// Outcome of a queue operation.
enum class QueueStatus {
  kOk,       // the item was enqueued / dequeued
  kTimeout,  // nothing happened before the deadline
  kFull,     // kReject policy and no free slot
  kClosed,   // the queue is closed (and, for pops, drained)
};

inline constexpr EnumNames<OverflowPolicy, 3> kOverflowPolicyNames{
    {{{OverflowPolicy::kBlock, "block"},
      {OverflowPolicy::kDropOldest, "drop_oldest"},
      {OverflowPolicy::kReject, "reject"}}}};
inline constexpr EnumNames<QueueStatus, 4> kQueueStatusNames{
    {{{QueueStatus::kOk, "ok"},
      {QueueStatus::kTimeout, "timeout"},
      {QueueStatus::kFull, "full"},
      {QueueStatus::kClosed, "closed"}}}};

// Returns "block" / "drop_oldest" / "reject".
inline absl::string_view OverflowPolicyName(OverflowPolicy p) {
  return kOverflowPolicyNames.Name(p, "unknown");
}
// Returns "ok" / "timeout" / "full" / "closed".
inline absl::string_view QueueStatusName(QueueStatus s) {
  return kQueueStatusNames.Name(s, "unknown");
}

// moodycamel traits: a large per-producer block index so that a producer can
// hold up to kMaxQueueCapacity items without the index having to grow.
struct BoundedQueueTraits : moodycamel::ConcurrentQueueDefaultTraits {
  static const size_t BLOCK_SIZE = 32;
  static const size_t IMPLICIT_INITIAL_INDEX_SIZE = 4096;
};
inline constexpr size_t kMaxQueueCapacity =
    BoundedQueueTraits::BLOCK_SIZE *
    (BoundedQueueTraits::IMPLICIT_INITIAL_INDEX_SIZE - 2);

// Construction parameters; all come from config.
struct QueueOptions {
  size_t capacity =
      1024;  // exact bound on queued items, 1 .. kMaxQueueCapacity
  OverflowPolicy overflow = OverflowPolicy::kBlock;
  // Distinct threads that will ever push. Blocks for `capacity` items plus two
  // partial blocks per producer are preallocated; more producers than this
  // still work, but may make the storage allocate (counted in
  // storage_allocations).
  size_t max_producers = 16;
  // Polls of the semaphore before a waiter sleeps in the kernel. Spinning cuts
  // wake-up latency on idle cores but steals a shared core from the thread it
  // waits for; 0 sleeps at once.
  int spin_before_sleep = 0;
};

// Point-in-time counters. Waits are summed over all threads, in nanoseconds.
struct QueueStats {
  size_t capacity = 0;
  size_t depth = 0;  // items queued now
  uint64_t pushed = 0;
  uint64_t popped = 0;
  uint64_t dropped = 0;   // evicted by kDropOldest
  uint64_t rejected = 0;  // refused by kReject
  uint64_t producer_wait_ns = 0;
  uint64_t consumer_wait_ns = 0;
  uint64_t storage_allocations = 0;  // enqueues that had to allocate a block (0
                                     // when max_producers is respected)
};

template <typename T>
class BoundedQueue {
 public:
  explicit BoundedQueue(const QueueOptions& options)
      : options_(options),
        storage_(options.capacity + BoundedQueueTraits::BLOCK_SIZE, 0,
                 options.max_producers),
        free_slots_(static_cast<Count>(options.capacity),
                    options.spin_before_sleep),
        ready_items_(0, options.spin_before_sleep) {}

  BoundedQueue(const BoundedQueue&) = delete;
  BoundedQueue& operator=(const BoundedQueue&) = delete;

  // Enqueues `item` per the overflow policy; waits forever under kBlock.
  QueueStatus Push(T item) { return PushImpl(std::move(item), -1); }

  // Like Push, but under kBlock gives up after `timeout` with kTimeout.
  QueueStatus Push(T item, absl::Duration timeout) {
    return PushImpl(std::move(item), ToMicros(timeout));
  }

  // Dequeues one item into `out`, waiting up to `timeout` (forever if
  // infinite).
  QueueStatus Pop(T& out, absl::Duration timeout = absl::InfiniteDuration()) {
    size_t n = 0;
    QueueStatus s = PopBulk(&out, 1, timeout, &n);
    return s;
  }

  // Dequeues between 1 and `max_items` items into out[0..*popped), waiting up
  // to `timeout` for the first one. Never waits for more than what is ready.
  QueueStatus PopBulk(T* out, size_t max_items, absl::Duration timeout,
                      size_t* popped) {
    *popped = 0;
    if (max_items == 0) return QueueStatus::kOk;
    auto max = static_cast<Count>(max_items);
    Count got = ready_items_.tryWaitMany(max);
    if (got == 0) {
      if (closed_.load(std::memory_order_acquire))
        return DrainAfterClose(out, max_items, popped);
      const auto t0 = std::chrono::steady_clock::now();
      got = ready_items_.waitMany(max, ToMicros(timeout));
      consumer_wait_ns_.fetch_add(ElapsedNs(t0), std::memory_order_relaxed);
      if (got == 0) {
        if (closed_.load(std::memory_order_acquire))
          return DrainAfterClose(out, max_items, popped);
        return QueueStatus::kTimeout;
      }
    }
    // `got` items are guaranteed enqueued (each was signalled after its
    // enqueue), except the wake-up tokens Close() adds; those are handled by
    // DrainAfterClose.
    size_t n = 0;
    while (n < static_cast<size_t>(got)) {
      size_t k =
          storage_.try_dequeue_bulk(out + n, static_cast<size_t>(got) - n);
      if (k == 0) {
        if (closed_.load(std::memory_order_acquire)) break;
        std::this_thread::yield();  // an enqueue is visible to us a moment late
        continue;
      }
      n += k;
    }
    Account(n, popped);
    if (n == 0) return DrainAfterClose(out, max_items, popped);
    return QueueStatus::kOk;
  }

  // Closes the queue and wakes every blocked producer and consumer. Idempotent.
  void Close() {
    if (closed_.exchange(true, std::memory_order_acq_rel)) return;
    // Wake-up tokens: far more than any number of waiters.
    free_slots_.signal(kWakeTokens);
    ready_items_.signal(kWakeTokens);
  }

  bool closed() const { return closed_.load(std::memory_order_acquire); }
  size_t capacity() const { return options_.capacity; }
  OverflowPolicy overflow() const { return options_.overflow; }
  // Items queued now (exact between operations, approximate during them, and
  // never above capacity: an item is counted popped before its slot is freed).
  size_t depth() const {
    const uint64_t in = pushed_.load(std::memory_order_relaxed);
    const uint64_t out = popped_.load(std::memory_order_relaxed) +
                         dropped_.load(std::memory_order_relaxed);
    return in > out ? static_cast<size_t>(in - out) : 0;
  }

  QueueStats stats() const {
    QueueStats s;
    s.capacity = options_.capacity;
    s.depth = depth();
    s.pushed = pushed_.load(std::memory_order_relaxed);
    s.popped = popped_.load(std::memory_order_relaxed);
    s.dropped = dropped_.load(std::memory_order_relaxed);
    s.rejected = rejected_.load(std::memory_order_relaxed);
    s.producer_wait_ns = producer_wait_ns_.load(std::memory_order_relaxed);
    s.consumer_wait_ns = consumer_wait_ns_.load(std::memory_order_relaxed);
    s.storage_allocations =
        storage_allocations_.load(std::memory_order_relaxed);
    return s;
  }

 private:
  using Count = moodycamel::LightweightSemaphore::ssize_t;
  static constexpr Count kWakeTokens = Count{1} << 30;
  static constexpr int kEnqueueRetries = 64;

  static std::int64_t ToMicros(absl::Duration d) {
    if (d == absl::InfiniteDuration()) return -1;
    if (d <= absl::ZeroDuration()) return 0;
    return absl::ToInt64Microseconds(d);
  }
  static uint64_t ElapsedNs(std::chrono::steady_clock::time_point t0) {
    return static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(
            std::chrono::steady_clock::now() - t0)
            .count());
  }

  // Counts a producer in flight so that a consumer seeing closed() and no
  // producer in flight knows no further item can appear.
  struct InFlight {
    explicit InFlight(std::atomic<int64_t>& c) : c_(c) {
      c_.fetch_add(1, std::memory_order_seq_cst);
    }
    ~InFlight() { c_.fetch_sub(1, std::memory_order_release); }
    std::atomic<int64_t>& c_;
  };

  QueueStatus PushImpl(T&& item, std::int64_t timeout_us) {
    InFlight in_flight(producers_in_flight_);
    if (closed_.load(std::memory_order_seq_cst)) return QueueStatus::kClosed;
    if (!free_slots_.tryWait()) {
      switch (options_.overflow) {
        case OverflowPolicy::kReject:
          rejected_.fetch_add(1, std::memory_order_relaxed);
          return QueueStatus::kFull;
        case OverflowPolicy::kDropOldest:
          if (!EvictOne()) {
            // Nothing to evict yet (items still in flight): wait for a slot.
            if (!WaitSlot(timeout_us))
              return Closed() ? QueueStatus::kClosed : QueueStatus::kTimeout;
          }
          break;
        case OverflowPolicy::kBlock:
          if (!WaitSlot(timeout_us))
            return Closed() ? QueueStatus::kClosed : QueueStatus::kTimeout;
          break;
      }
    }
    if (Closed()) return QueueStatus::kClosed;
    // A slot is ours. Storage was preallocated, so try_enqueue (which never
    // allocates) fails only while consumers are recycling blocks, or when more
    // threads push than max_producers; then, and only then, allocate a block.
    bool enqueued = false;
    for (int i = 0; i < kEnqueueRetries && !enqueued; ++i) {
      enqueued = storage_.try_enqueue(std::move(item));
      if (!enqueued) std::this_thread::yield();
    }
    if (!enqueued) {
      storage_allocations_.fetch_add(1, std::memory_order_relaxed);
      storage_.enqueue(std::move(item));
    }
    pushed_.fetch_add(1, std::memory_order_relaxed);
    ready_items_.signal();
    return QueueStatus::kOk;
  }

  bool Closed() const { return closed_.load(std::memory_order_acquire); }

  // Waits for a free slot; false on timeout or close.
  bool WaitSlot(std::int64_t timeout_us) {
    const auto t0 = std::chrono::steady_clock::now();
    bool ok = free_slots_.wait(timeout_us);
    producer_wait_ns_.fetch_add(ElapsedNs(t0), std::memory_order_relaxed);
    return ok && !Closed();
  }

  // Takes one ready item out and discards it, keeping its slot for the caller.
  bool EvictOne() {
    if (!ready_items_.tryWait()) return false;
    T victim;
    while (!storage_.try_dequeue(victim)) {
      if (Closed()) return false;
      std::this_thread::yield();
    }
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return true;
  }

  void Account(size_t n, size_t* popped) {
    *popped = n;
    if (n == 0) return;
    popped_.fetch_add(n, std::memory_order_relaxed);
    if (!Closed()) free_slots_.signal(static_cast<Count>(n));
  }

  // After Close(): hand out what is left; kClosed once empty and no producer
  // can still add an item.
  QueueStatus DrainAfterClose(T* out, size_t max_items, size_t* popped) {
    for (;;) {
      size_t n = storage_.try_dequeue_bulk(out, max_items);
      if (n > 0) {
        Account(n, popped);
        return QueueStatus::kOk;
      }
      if (producers_in_flight_.load(std::memory_order_acquire) == 0) {
        n = storage_.try_dequeue_bulk(out, max_items);
        Account(n, popped);
        return n > 0 ? QueueStatus::kOk : QueueStatus::kClosed;
      }
      std::this_thread::yield();
    }
  }

  const QueueOptions options_;
  moodycamel::ConcurrentQueue<T, BoundedQueueTraits> storage_;
  moodycamel::LightweightSemaphore free_slots_;
  moodycamel::LightweightSemaphore ready_items_;
  std::atomic<bool> closed_{false};
  std::atomic<int64_t> producers_in_flight_{0};
  std::atomic<uint64_t> pushed_{0};
  std::atomic<uint64_t> popped_{0};
  std::atomic<uint64_t> dropped_{0};
  std::atomic<uint64_t> rejected_{0};
  std::atomic<uint64_t> producer_wait_ns_{0};
  std::atomic<uint64_t> consumer_wait_ns_{0};
  std::atomic<uint64_t> storage_allocations_{0};
};

}  // namespace rlvla3

#endif  // RLVLA3_RUNTIME_BOUNDED_QUEUE_H_
