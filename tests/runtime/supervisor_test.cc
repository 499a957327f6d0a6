#include "runtime/supervisor.h"

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>

#include "runtime/bounded_queue.h"

namespace rlvla3 {
namespace {

TEST(Supervisor, FirstErrorStopsEveryThreadAndIsReturnedWithItsName) {
  QueueOptions o;
  o.capacity = 4;
  BoundedQueue<int> q(o);
  Supervisor sup([&] { q.Close(); });
  std::atomic<int> unblocked{0};
  // Three threads block on an empty queue; a later thread fails.
  for (int i = 0; i < 3; ++i) {
    sup.Spawn("waiter-" + std::to_string(i), [&]() -> absl::Status {
      int v;
      if (q.Pop(v) == QueueStatus::kClosed) unblocked.fetch_add(1);
      return absl::OkStatus();
    });
  }
  sup.Spawn("failing-stage",
            [] { return absl::InternalError("disk on fire"); });
  absl::Status s = sup.Wait();
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(s.message(), "failing-stage: disk on fire");
  EXPECT_EQ(unblocked.load(), 3);
  EXPECT_EQ(sup.running(), 0);
}

TEST(Supervisor, ExceptionBecomesAnError) {
  Supervisor sup(nullptr);
  sup.Spawn("thrower",
            []() -> absl::Status { throw std::runtime_error("boom"); });
  absl::Status s = sup.Wait();
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_NE(s.message().find("thrower: uncaught exception: boom"),
            std::string::npos);
}

TEST(Supervisor, CleanRunAndRequestStop) {
  std::atomic<bool> stop{false};
  Supervisor sup([&] { stop = true; });
  sup.Spawn("spinner", [&]() -> absl::Status {
    while (!stop.load()) std::this_thread::yield();
    return absl::OkStatus();
  });
  sup.RequestStop();
  EXPECT_TRUE(sup.stopping());
  EXPECT_TRUE(sup.Wait().ok());
}

}  // namespace
}  // namespace rlvla3
