// File: envs/image_io.h
// -----------------------------------------------------------------------------
// Writing what the envs see, so a person can look at it: PNG stills (libpng)
// and animated GIFs (own encoder: a fixed 6x7x6 colour cube palette and LZW,
// no dependency). Images are uint8 RGB, HWC, row 0 at the top.
//
// Example:
//   WritePng("frame.png", rgb.data(), 256, 128);
//   GifWriter gif;
//   gif.Open("run.gif", 256, 128, /*centiseconds per frame=*/5);
//   for (...) gif.AddFrame(rgb.data());
//   gif.Close();
// -----------------------------------------------------------------------------
#ifndef RLVLA3_ENVS_IMAGE_IO_H_
#define RLVLA3_ENVS_IMAGE_IO_H_

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace rlvla3 {

// Writes an 8-bit RGB PNG.
absl::Status WritePng(const std::string& path, const uint8_t* rgb, int width,
                      int height);

// Places images of equal height side by side: out is height x (sum of widths)
// x 3.
void ConcatHorizontal(const std::vector<const uint8_t*>& images,
                      const std::vector<int>& widths, int height,
                      std::vector<uint8_t>* out);

class GifWriter {
 public:
  GifWriter() = default;
  ~GifWriter();
  GifWriter(const GifWriter&) = delete;
  GifWriter& operator=(const GifWriter&) = delete;

  absl::Status Open(const std::string& path, int width, int height,
                    int delay_cs);
  absl::Status AddFrame(const uint8_t* rgb);
  absl::Status Close();
  int frames() const { return frames_; }

 private:
  std::FILE* f_ = nullptr;
  int width_ = 0;
  int height_ = 0;
  int delay_cs_ = 5;
  int frames_ = 0;
  std::vector<uint8_t> indices_;
};

}  // namespace rlvla3

#endif  // RLVLA3_ENVS_IMAGE_IO_H_
