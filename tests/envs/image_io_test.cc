#include "envs/image_io.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "tests/test_dir.h"

namespace rlvla3 {
namespace {

std::string Read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)),
                     std::istreambuf_iterator<char>());
}

TEST(ImageIo, PngHasSignatureAndSize) {
  std::vector<uint8_t> rgb(8 * 4 * 3, 200);
  const testutil::TestDir dir;
  const std::string path = dir.File("x.png");
  ASSERT_TRUE(WritePng(path, rgb.data(), 8, 4).ok());
  const std::string b = Read(path);
  ASSERT_GT(b.size(), 24u);
  EXPECT_EQ(b.substr(1, 3), "PNG");
  // IHDR width and height, big-endian.
  EXPECT_EQ(static_cast<uint8_t>(b[19]), 8);
  EXPECT_EQ(static_cast<uint8_t>(b[23]), 4);
  EXPECT_FALSE(WritePng("/nonexistent/x.png", rgb.data(), 8, 4).ok());
}

TEST(ImageIo, GifIsWellFormed) {
  const int w = 40, h = 30;
  std::vector<uint8_t> rgb(w * h * 3);
  const testutil::TestDir dir;
  const std::string path = dir.File("x.gif");
  GifWriter gif;
  ASSERT_TRUE(gif.Open(path, w, h, 5).ok());
  for (int f = 0; f < 3; ++f) {
    for (size_t i = 0; i < rgb.size(); ++i)
      rgb[i] = static_cast<uint8_t>((i * 7 + f * 50) % 256);
    ASSERT_TRUE(gif.AddFrame(rgb.data()).ok());
  }
  ASSERT_TRUE(gif.Close().ok());
  EXPECT_EQ(gif.frames(), 3);
  const std::string b = Read(path);
  EXPECT_EQ(b.substr(0, 6), "GIF89a");
  EXPECT_EQ(static_cast<uint8_t>(b[6]), w);
  EXPECT_EQ(static_cast<uint8_t>(b.back()), 0x3B);
}

TEST(ImageIo, ConcatHorizontal) {
  std::vector<uint8_t> a(2 * 2 * 3, 1), b(3 * 2 * 3, 2), out;
  ConcatHorizontal({a.data(), b.data()}, {2, 3}, 2, &out);
  ASSERT_EQ(out.size(), size_t(5 * 2 * 3));
  EXPECT_EQ(out[0], 1);
  EXPECT_EQ(out[6], 2);
  EXPECT_EQ(out[15], 1);
}

}  // namespace
}  // namespace rlvla3
