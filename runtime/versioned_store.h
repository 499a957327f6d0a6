// File: runtime/versioned_store.h
// -----------------------------------------------------------------------------
// The storage behind the in-process weight channel: the learner publishes
// versioned, immutable weight snapshots; inference actors take the latest one
// between batches. Publishing builds the snapshot first (on the learner's
// thread) and then swaps one shared_ptr under a lock held for a pointer copy,
// so an actor never waits for a publish in progress, and the snapshot an actor
// holds stays alive until its batch is done (double buffering: the old and new
// snapshots coexist).
//
// Example:
//   VersionedStore<Policy> store;
//   store.Publish(std::make_shared<MyPolicy>(...), /*version=*/3);
//   VersionedStore<Policy>::Entry e = store.Latest();   // {policy, version}
//   if (e.version != my_version) { current = e.value; }
// -----------------------------------------------------------------------------
#ifndef RLVLA3_RUNTIME_VERSIONED_STORE_H_
#define RLVLA3_RUNTIME_VERSIONED_STORE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>

#include "absl/base/thread_annotations.h"

namespace rlvla3 {

template <typename T>
class VersionedStore {
 public:
  struct Entry {
    std::shared_ptr<T> value;
    uint64_t version = 0;
  };

  // Makes `value` the latest snapshot. Versions must not go backwards.
  void Publish(std::shared_ptr<T> value, uint64_t version) {
    Entry old;
    {
      std::lock_guard<std::mutex> lock(mu_);
      old = std::move(latest_);  // released outside the lock
      latest_.value = std::move(value);
      latest_.version = version;
    }
    version_.store(version, std::memory_order_release);
    publishes_.fetch_add(1, std::memory_order_relaxed);
  }
  // The latest snapshot (value is null before the first Publish).
  Entry Latest() const {
    std::lock_guard<std::mutex> lock(mu_);
    return latest_;
  }
  // The latest version, without taking the lock (to skip unchanged swaps).
  uint64_t version() const { return version_.load(std::memory_order_acquire); }
  uint64_t publishes() const {
    return publishes_.load(std::memory_order_relaxed);
  }

 private:
  mutable std::mutex mu_;
  Entry latest_ ABSL_GUARDED_BY(mu_);
  std::atomic<uint64_t> version_{0};
  std::atomic<uint64_t> publishes_{0};
};

}  // namespace rlvla3

#endif  // RLVLA3_RUNTIME_VERSIONED_STORE_H_
