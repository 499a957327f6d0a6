#include "envs/image_io.h"

#include <png.h>

#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "absl/strings/str_cat.h"

namespace rlvla3 {
namespace {

// The GIF palette: 6 levels of red, 7 of green, 6 of blue (252 colours).
constexpr int kR = 6, kG = 7, kB = 6;
constexpr int kPaletteBits = 8;  // 256 entries, 252 used
constexpr int kMaxCode = 4095;   // GIF LZW codes are at most 12 bits

// 4x4 Bayer matrix: ordered dithering hides the coarse palette's banding.
constexpr int kBayer[4][4] = {
    {0, 8, 2, 10}, {12, 4, 14, 6}, {3, 11, 1, 9}, {15, 7, 13, 5}};

// Palette index of pixel p at (x, y): each channel is quantised to its levels
// after adding a position-dependent threshold in [0, 1) of one level.
uint8_t PaletteIndex(const uint8_t* p, int x, int y) {
  const int t = kBayer[y & 3][x & 3];  // 0..15
  auto level = [t](int v, int levels) {
    return std::min(levels - 1, (v * (levels - 1) * 16 + t * 255) / (255 * 16));
  };
  return static_cast<uint8_t>((level(p[0], kR) * kG + level(p[1], kG)) * kB +
                              level(p[2], kB));
}

// Packs variable-width LZW codes into GIF's 255-byte sub-blocks.
class BitPacker {
 public:
  explicit BitPacker(std::FILE* f) : f_(f) {}
  void Put(int code, int bits) {
    acc_ |= static_cast<uint32_t>(code) << nbits_;
    nbits_ += bits;
    while (nbits_ >= 8) {
      Byte(static_cast<uint8_t>(acc_ & 0xFF));
      acc_ >>= 8;
      nbits_ -= 8;
    }
  }
  void Finish() {
    if (nbits_ > 0) Byte(static_cast<uint8_t>(acc_ & 0xFF));
    acc_ = 0;
    nbits_ = 0;
    Flush();
    std::fputc(0, f_);  // block terminator
  }

 private:
  void Byte(uint8_t b) {
    block_[len_++] = b;
    if (len_ == 255) Flush();
  }
  void Flush() {
    if (len_ == 0) return;
    std::fputc(len_, f_);
    std::fwrite(block_, 1, len_, f_);
    len_ = 0;
  }
  std::FILE* f_;
  uint32_t acc_ = 0;
  int nbits_ = 0;
  uint8_t block_[255];
  int len_ = 0;
};

}  // namespace

absl::Status WritePng(const std::string& path, const uint8_t* rgb, int width,
                      int height) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr)
    return absl::UnavailableError(absl::StrCat("cannot write ", path));
  png_structp png =
      png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  if (png == nullptr || info == nullptr || setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    std::fclose(f);
    return absl::InternalError(absl::StrCat("libpng failed writing ", path));
  }
  png_init_io(png, f);
  png_set_IHDR(png, info, width, height, 8, PNG_COLOR_TYPE_RGB,
               PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  for (int y = 0; y < height; ++y) {
    png_write_row(
        png, const_cast<png_bytep>(rgb + static_cast<size_t>(y) * width * 3));
  }
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  if (std::fclose(f) != 0)
    return absl::UnavailableError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

void ConcatHorizontal(const std::vector<const uint8_t*>& images,
                      const std::vector<int>& widths, int height,
                      std::vector<uint8_t>* out) {
  int total = 0;
  for (int w : widths) total += w;
  out->resize(static_cast<size_t>(total) * height * 3);
  for (int y = 0; y < height; ++y) {
    uint8_t* dst = out->data() + static_cast<size_t>(y) * total * 3;
    for (size_t i = 0; i < images.size(); ++i) {
      const size_t row = static_cast<size_t>(widths[i]) * 3;
      std::memcpy(dst, images[i] + y * row, row);
      dst += row;
    }
  }
}

GifWriter::~GifWriter() {
  if (f_ != nullptr) Close().IgnoreError();
}

absl::Status GifWriter::Open(const std::string& path, int width, int height,
                             int delay_cs) {
  f_ = std::fopen(path.c_str(), "wb");
  if (f_ == nullptr)
    return absl::UnavailableError(absl::StrCat("cannot write ", path));
  width_ = width;
  height_ = height;
  delay_cs_ = delay_cs;
  indices_.resize(static_cast<size_t>(width) * height);
  std::fwrite("GIF89a", 1, 6, f_);
  const uint8_t screen[7] = {static_cast<uint8_t>(width & 0xFF),
                             static_cast<uint8_t>(width >> 8),
                             static_cast<uint8_t>(height & 0xFF),
                             static_cast<uint8_t>(height >> 8),
                             0xF0 | (kPaletteBits - 1),
                             0,
                             0};
  std::fwrite(screen, 1, 7, f_);
  for (int i = 0; i < (1 << kPaletteBits); ++i) {
    uint8_t c[3] = {0, 0, 0};
    if (i < kR * kG * kB) {
      c[0] = static_cast<uint8_t>((i / (kG * kB)) * 255 / (kR - 1));
      c[1] = static_cast<uint8_t>(((i / kB) % kG) * 255 / (kG - 1));
      c[2] = static_cast<uint8_t>((i % kB) * 255 / (kB - 1));
    }
    std::fwrite(c, 1, 3, f_);
  }
  // Loop forever (NETSCAPE2.0 application extension).
  const uint8_t loop[19] = {0x21, 0xFF, 0x0B, 'N', 'E', 'T', 'S', 'C', 'A', 'P',
                            'E',  '2',  '.',  '0', 3,   1,   0,   0,   0};
  std::fwrite(loop, 1, 19, f_);
  return absl::OkStatus();
}

absl::Status GifWriter::AddFrame(const uint8_t* rgb) {
  if (f_ == nullptr) return absl::FailedPreconditionError("GIF not open");
  const size_t n = indices_.size();
  for (size_t i = 0; i < n; ++i) {
    indices_[i] = PaletteIndex(rgb + 3 * i, static_cast<int>(i % width_),
                               static_cast<int>(i / width_));
  }
  const uint8_t gce[8] = {0x21,
                          0xF9,
                          4,
                          0,
                          static_cast<uint8_t>(delay_cs_ & 0xFF),
                          static_cast<uint8_t>(delay_cs_ >> 8),
                          0,
                          0};
  std::fwrite(gce, 1, 8, f_);
  const uint8_t desc[10] = {0x2C,
                            0,
                            0,
                            0,
                            0,
                            static_cast<uint8_t>(width_ & 0xFF),
                            static_cast<uint8_t>(width_ >> 8),
                            static_cast<uint8_t>(height_ & 0xFF),
                            static_cast<uint8_t>(height_ >> 8),
                            0};
  std::fwrite(desc, 1, 10, f_);
  std::fputc(kPaletteBits, f_);  // LZW minimum code size
  // LZW: dictionary keyed by (prefix code << 8 | next byte).
  const int clear = 1 << kPaletteBits, stop = clear + 1;
  std::unordered_map<uint32_t, int> dict;
  dict.reserve(8192);
  int next = stop + 1, bits = kPaletteBits + 1;
  BitPacker out(f_);
  out.Put(clear, bits);
  int prefix = indices_[0];
  for (size_t i = 1; i < n; ++i) {
    const uint8_t c = indices_[i];
    const uint32_t key = (static_cast<uint32_t>(prefix) << 8) | c;
    auto it = dict.find(key);
    if (it != dict.end()) {
      prefix = it->second;
      continue;
    }
    out.Put(prefix, bits);
    if (next <= kMaxCode) {
      dict.emplace(key, next);
      if (next == (1 << bits) && bits < 12) ++bits;
      ++next;
    } else {
      out.Put(clear, bits);
      dict.clear();
      next = stop + 1;
      bits = kPaletteBits + 1;
    }
    prefix = c;
  }
  out.Put(prefix, bits);
  out.Put(stop, bits);
  out.Finish();
  ++frames_;
  return absl::OkStatus();
}

absl::Status GifWriter::Close() {
  if (f_ == nullptr) return absl::OkStatus();
  std::fputc(0x3B, f_);
  const bool ok = std::fclose(f_) == 0;
  f_ = nullptr;
  return ok ? absl::OkStatus() : absl::UnavailableError("cannot finish GIF");
}

}  // namespace rlvla3
