#include "policies/image_augment.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <set>
#include <utility>

namespace rlvla3 {
namespace {

// Distinct values everywhere, so a crop identifies its own offset.
at::Tensor Ramp(int64_t B, int64_t H, int64_t W) {
  return (torch::arange(B * H * W * 3, torch::kLong) % 251)
      .to(torch::kByte)
      .view({B, H, W, 3});
}

// Reference: pixel (y, x) of the shifted image is pixel
// (clamp(y + dy - pad), clamp(x + dx - pad)) of the original.
bool MatchesShift(const at::Tensor& src, const at::Tensor& out, int64_t pad,
                  int64_t dy, int64_t dx) {
  const int64_t H = src.size(0), W = src.size(1);
  auto s = src.accessor<uint8_t, 3>();
  auto o = out.accessor<uint8_t, 3>();
  for (int64_t y = 0; y < H; ++y) {
    for (int64_t x = 0; x < W; ++x) {
      const int64_t sy = std::clamp<int64_t>(y + dy - pad, 0, H - 1);
      const int64_t sx = std::clamp<int64_t>(x + dx - pad, 0, W - 1);
      for (int c = 0; c < 3; ++c) {
        if (o[y][x][c] != s[sy][sx][c]) return false;
      }
    }
  }
  return true;
}

TEST(RandomShift, ZeroPadIsIdentity) {
  std::mt19937_64 rng(1);
  const at::Tensor img = Ramp(2, 8, 8);
  EXPECT_TRUE(torch::equal(RandomShift(img, 0, &rng), img));
}

TEST(RandomShift, EachImageIsAnEdgeReplicatedShiftOfItself) {
  const int64_t pad = 2, B = 16, H = 10, W = 12;
  std::mt19937_64 rng(7);
  const at::Tensor img = Ramp(B, H, W);
  const at::Tensor out = RandomShift(img, pad, &rng);
  ASSERT_EQ(out.sizes(), img.sizes());
  std::set<std::pair<int64_t, int64_t>> seen;
  for (int64_t b = 0; b < B; ++b) {
    int matches = 0;
    for (int64_t dy = 0; dy <= 2 * pad; ++dy) {
      for (int64_t dx = 0; dx <= 2 * pad; ++dx) {
        if (MatchesShift(img[b], out[b], pad, dy, dx)) {
          ++matches;
          seen.insert({dy, dx});
        }
      }
    }
    EXPECT_EQ(matches, 1) << "image " << b;
  }
  // Offsets are drawn per image, not once per batch.
  EXPECT_GT(seen.size(), 3u);
}

TEST(RandomShift, SameSeedSameShifts) {
  const at::Tensor img = Ramp(4, 8, 8);
  std::mt19937_64 a(3), b(3);
  EXPECT_TRUE(torch::equal(RandomShift(img, 3, &a), RandomShift(img, 3, &b)));
}

}  // namespace
}  // namespace rlvla3
