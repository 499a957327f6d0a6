// File: runtime/channels/weight_channel.h
// -----------------------------------------------------------------------------
// Level 3 channel: the learner publishes versioned, immutable weight
// snapshots; inference servers take the latest one between batches (latest
// wins: a version nobody took in time is simply skipped), and subscribers
// hear of every new version (a rollout worker's admission control needs the
// version, not the weights). `T` is what a snapshot is: in one process a
// ready-to-run copy of the policy; over gRPC, its serialised state.
// LocalWeightChannel keeps the latest snapshot in a VersionedStore: publishing
// never waits for a reader and a reader never waits for a publish.
//
// Example:
//   LocalWeightChannel<Policy> weights;
//   weights.Subscribe([](uint64_t v) { gate.Advance(v); });  // must not block
//   weights.Publish(snapshot, /*version=*/3);          // learner
//   WeightChannel<Policy>::Entry e = weights.Latest();  // inference
// -----------------------------------------------------------------------------
#ifndef RLVLA3_RUNTIME_CHANNELS_WEIGHT_CHANNEL_H_
#define RLVLA3_RUNTIME_CHANNELS_WEIGHT_CHANNEL_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "runtime/versioned_store.h"

namespace rlvla3 {

template <typename T>
class WeightChannel {
 public:
  using Entry = typename VersionedStore<T>::Entry;
  virtual ~WeightChannel() = default;
  // Makes `snapshot` the latest; versions must not go backwards. Subscribers
  // are called on the publishing thread.
  virtual void Publish(std::shared_ptr<T> snapshot, uint64_t version) = 0;
  // The latest snapshot (value null before the first Publish).
  virtual Entry Latest() const = 0;
  // The latest version, cheap enough to poll before every batch.
  virtual uint64_t version() const = 0;
  // `on_version` hears every later Publish; it must not block.
  virtual void Subscribe(std::function<void(uint64_t)> on_version) = 0;
};

template <typename T>
class LocalWeightChannel final : public WeightChannel<T> {
 public:
  using Entry = typename WeightChannel<T>::Entry;
  void Publish(std::shared_ptr<T> snapshot, uint64_t version) override {
    store_.Publish(std::move(snapshot), version);
    // Called under the lock (no copy per publish); subscribers must not
    // block, nor subscribe from inside the call.
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& s : subscribers_) s(version);
  }
  Entry Latest() const override { return store_.Latest(); }
  uint64_t version() const override { return store_.version(); }
  void Subscribe(std::function<void(uint64_t)> on_version) override {
    std::lock_guard<std::mutex> lock(mu_);
    subscribers_.push_back(std::move(on_version));
  }
  uint64_t publishes() const { return store_.publishes(); }

 private:
  VersionedStore<T> store_;
  std::mutex mu_;
  std::vector<std::function<void(uint64_t)>> subscribers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace rlvla3

#endif  // RLVLA3_RUNTIME_CHANNELS_WEIGHT_CHANNEL_H_
