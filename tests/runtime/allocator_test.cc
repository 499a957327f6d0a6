// The allocator chosen at build time (cmake/RlVla3Allocator.cmake) is the one
// that serves malloc at run time: a link that silently lost it fails here.
#include "runtime/allocator.h"

#include <gtest/gtest.h>

#include <string>

namespace rlvla3 {
namespace {

TEST(Allocator, TheConfiguredAllocatorServesMalloc) {
  const std::string expected = RLVLA3_EXPECTED_ALLOCATOR;
  const std::string in_use = AllocatorInUse();
  if (expected == "glibc") {
    // Sanitizer builds report their runtime; plain builds glibc.
    EXPECT_TRUE(in_use.rfind("glibc malloc", 0) == 0 ||
                in_use.rfind("malloc from", 0) == 0)
        << in_use;
  } else {
    EXPECT_EQ(in_use.rfind(expected, 0), 0u)
        << "built for " << expected << ", malloc comes from: " << in_use;
  }
}

}  // namespace
}  // namespace rlvla3
