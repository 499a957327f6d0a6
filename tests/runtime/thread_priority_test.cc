#include "runtime/thread_priority.h"

#include <gtest/gtest.h>

#include <thread>

namespace rlvla3 {
namespace {

TEST(ThreadPriority, NiceAppliesToTheCallingThreadOnly) {
  const int before = CurrentThreadNice();
  int inside = -100, other = -100;
  std::thread t([&] {
    ASSERT_TRUE(SetCurrentThreadNice(before + 3 > 19 ? 19 : before + 3).ok());
    inside = CurrentThreadNice();
  });
  t.join();
  std::thread u([&] { other = CurrentThreadNice(); });
  u.join();
  EXPECT_EQ(inside, before + 3 > 19 ? 19 : before + 3);
  EXPECT_EQ(other, before);
  EXPECT_EQ(CurrentThreadNice(), before);
}

TEST(ThreadPriority, OutOfRangeIsAnError) {
  EXPECT_EQ(SetCurrentThreadNice(20).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SetCurrentThreadNice(-1).code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace rlvla3
