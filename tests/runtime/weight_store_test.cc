// A weight publish never blocks inference: building a snapshot and releasing
// the previous one both happen outside the store's lock.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include "runtime/versioned_store.h"

namespace rlvla3 {
namespace {

using std::chrono::seconds;

TEST(VersionedStore, LatestAndVersion) {
  VersionedStore<int> store;
  EXPECT_EQ(store.Latest().value, nullptr);
  store.Publish(std::make_shared<int>(7), 3);
  EXPECT_EQ(*store.Latest().value, 7);
  EXPECT_EQ(store.Latest().version, 3u);
  EXPECT_EQ(store.version(), 3u);
}

// An old snapshot stays valid for the actor holding it (double buffering).
TEST(VersionedStore, HeldSnapshotSurvivesPublish) {
  VersionedStore<int> store;
  store.Publish(std::make_shared<int>(1), 1);
  std::shared_ptr<int> held = store.Latest().value;
  store.Publish(std::make_shared<int>(2), 2);
  EXPECT_EQ(*held, 1);
  EXPECT_EQ(*store.Latest().value, 2);
}

// The publisher's previous snapshot is destroyed slowly: its destructor waits
// for the actor to finish 1000 batches. If Publish released it under the
// lock, the actor's Latest() would block and the destructor's wait would time
// out.
struct SlowToRelease {
  std::shared_future<void> actor_done;
  std::atomic<bool>* releasing = nullptr;
  std::atomic<bool>* released_in_time = nullptr;
  ~SlowToRelease() {
    if (releasing == nullptr) return;
    *releasing = true;
    *released_in_time =
        actor_done.wait_for(seconds(20)) == std::future_status::ready;
  }
};

TEST(VersionedStore, SlowPublisherNeverBlocksActors) {
  VersionedStore<SlowToRelease> store;
  std::promise<void> done;
  std::shared_future<void> done_f = done.get_future().share();
  std::atomic<bool> releasing{false}, released_in_time{false};
  auto first = std::make_shared<SlowToRelease>();  // built in place: no
  first->actor_done = done_f;                      // temporary to destroy
  first->releasing = &releasing;
  first->released_in_time = &released_in_time;
  store.Publish(std::move(first), 1);
  std::thread publisher([&] {
    // Replaces version 1: its destructor runs inside this Publish call.
    store.Publish(std::make_shared<SlowToRelease>(), 2);
  });
  while (!releasing) std::this_thread::yield();
  // The "actor": 1000 batches, each taking the latest snapshot while the
  // publisher is still inside Publish.
  int newest = 0;
  for (int batch = 0; batch < 1000; ++batch) {
    if (store.Latest().version == 2) ++newest;
  }
  done.set_value();
  publisher.join();
  EXPECT_TRUE(released_in_time);
  EXPECT_EQ(newest, 1000);
}

}  // namespace
}  // namespace rlvla3
