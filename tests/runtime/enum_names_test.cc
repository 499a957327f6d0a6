// Every enum's name table reads both ways, with unique names, and the
// config's choices are the tables' names.
#include "runtime/enum_names.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "runtime/bounded_queue.h"
#include "runtime/config.h"
#include "runtime/fault_plan.h"
#include "runtime/render_choices.h"

namespace rlvla3 {
namespace {

template <typename E, size_t N>
void ExpectRoundTrips(const EnumNames<E, N>& names) {
  std::set<std::string> seen;
  for (const auto& [value, name] : names.table) {
    EXPECT_TRUE(seen.insert(name).second) << "duplicate name " << name;
    EXPECT_EQ(names.Parse(name), value) << name;
    EXPECT_STREQ(names.Name(value), name);
  }
  EXPECT_FALSE(names.Parse("no-such-name").has_value());
  EXPECT_EQ(names.Names().size(), N);
}

TEST(EnumNames, EveryTableReadsBothWaysWithUniqueNames) {
  ExpectRoundTrips(kRenderBackendNames);
  ExpectRoundTrips(kReadbackNames);
  ExpectRoundTrips(kFaultKindNames);
  ExpectRoundTrips(kOverflowPolicyNames);
  ExpectRoundTrips(kQueueStatusNames);
  enum class Color { kRed, kBlue };
  constexpr EnumNames<Color, 1> partial{{{{Color::kRed, "red"}}}};
  EXPECT_STREQ(partial.Name(Color::kBlue), "?");
  EXPECT_STREQ(partial.Name(Color::kBlue, "unknown"), "unknown");
}

TEST(EnumNames, TheConfigAcceptsExactlyTheTablesNames) {
  for (const std::string& name : kRenderBackendNames.Names()) {
    EXPECT_TRUE(LoadConfig("", {"env.render_backend=" + name}).ok()) << name;
  }
  for (const std::string& name : kReadbackNames.Names()) {
    EXPECT_TRUE(LoadConfig("", {"env.readback=" + name}).ok()) << name;
  }
  const absl::StatusOr<Config> bad =
      LoadConfig("", {"env.render_backend=osmesa"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("mesa"), std::string::npos)
      << bad.status();
  const absl::StatusOr<Config> c =
      LoadConfig("", {"queues.request.overflow=drop_oldest"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(ParseOverflowPolicy(c->queues.request.overflow),
            OverflowPolicy::kDropOldest);
}

}  // namespace
}  // namespace rlvla3
