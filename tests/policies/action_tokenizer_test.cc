#include "policies/action_tokenizer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace rlvla3 {
namespace {

TEST(ActionTokenizer, RoundTripIsWithinHalfABin) {
  ActionTokenizer tok;
  for (float a = -1.0f; a <= 1.0f; a += 0.001f) {
    const int64_t t = tok.Encode(a);
    ASSERT_GE(t, 0);
    ASSERT_LT(t, 256);
    EXPECT_LE(std::fabs(tok.Decode(t) - a), tok.bin_width() / 2 + 1e-6f) << a;
  }
}

TEST(ActionTokenizer, ClampsAndHandlesEdges) {
  ActionTokenizer tok(256);
  EXPECT_EQ(tok.Encode(-1.0f), 0);
  EXPECT_EQ(tok.Encode(1.0f), 255);
  EXPECT_EQ(tok.Encode(5.0f), 255);
  EXPECT_EQ(tok.Encode(-5.0f), 0);
  EXPECT_EQ(tok.Encode(std::numeric_limits<float>::quiet_NaN()), 128);
  EXPECT_EQ(tok.Encode(0.3f), 166);
  EXPECT_FLOAT_EQ(tok.Decode(0), -1.0f + 1.0f / 256);
  EXPECT_FLOAT_EQ(tok.Decode(1000), tok.Decode(255));
}

TEST(ActionTokenizer, TokensAreMonotonic) {
  ActionTokenizer tok(16);
  int64_t prev = -1;
  for (float a = -1.0f; a <= 1.0f; a += 0.01f) {
    const int64_t t = tok.Encode(a);
    EXPECT_GE(t, prev);
    prev = t;
  }
}

}  // namespace
}  // namespace rlvla3
