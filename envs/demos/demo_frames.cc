#include "envs/demos/demo_frames.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace rlvla3 {
namespace {

void AreaResize(const uint8_t* in, int64_t h, int64_t w, int64_t out_h,
                int64_t out_w, uint8_t* out) {
  const int64_t fy = h / out_h, fx = w / out_w;
  const int64_t n = fy * fx;
  for (int64_t y = 0; y < out_h; ++y) {
    for (int64_t x = 0; x < out_w; ++x) {
      for (int64_t c = 0; c < 3; ++c) {
        int64_t sum = 0;
        for (int64_t dy = 0; dy < fy; ++dy) {
          const uint8_t* row = in + ((y * fy + dy) * w + x * fx) * 3 + c;
          for (int64_t dx = 0; dx < fx; ++dx) sum += row[dx * 3];
        }
        out[(y * out_w + x) * 3 + c] = static_cast<uint8_t>((sum + n / 2) / n);
      }
    }
  }
}

void BilinearResize(const uint8_t* in, int64_t h, int64_t w, int64_t out_h,
                    int64_t out_w, uint8_t* out) {
  auto source = [](int64_t i, int64_t n_in, int64_t n_out, int64_t* lo,
                   float* frac) {
    const float s = std::clamp((i + 0.5f) * n_in / n_out - 0.5f, 0.0f,
                               static_cast<float>(n_in - 1));
    *lo = std::min<int64_t>(static_cast<int64_t>(s), n_in - 1);
    *frac = s - static_cast<float>(*lo);
  };
  for (int64_t y = 0; y < out_h; ++y) {
    int64_t y0 = 0;
    float fy = 0;
    source(y, h, out_h, &y0, &fy);
    const int64_t y1 = std::min(y0 + 1, h - 1);
    for (int64_t x = 0; x < out_w; ++x) {
      int64_t x0 = 0;
      float fx = 0;
      source(x, w, out_w, &x0, &fx);
      const int64_t x1 = std::min(x0 + 1, w - 1);
      for (int64_t c = 0; c < 3; ++c) {
        auto at = [&](int64_t yy, int64_t xx) {
          return static_cast<float>(in[(yy * w + xx) * 3 + c]);
        };
        const float top = at(y0, x0) * (1 - fx) + at(y0, x1) * fx;
        const float bottom = at(y1, x0) * (1 - fx) + at(y1, x1) * fx;
        out[(y * out_w + x) * 3 + c] =
            static_cast<uint8_t>(std::lround(top * (1 - fy) + bottom * fy));
      }
    }
  }
}

}  // namespace

void FlipRows(uint8_t* frames, int64_t count, int64_t h, int64_t w) {
  const size_t row = static_cast<size_t>(w) * 3;
  std::vector<uint8_t> tmp(row);
  for (int64_t f = 0; f < count; ++f) {
    uint8_t* frame = frames + f * h * static_cast<int64_t>(row);
    for (int64_t y = 0; y < h / 2; ++y) {
      uint8_t* a = frame + y * static_cast<int64_t>(row);
      uint8_t* b = frame + (h - 1 - y) * static_cast<int64_t>(row);
      std::memcpy(tmp.data(), a, row);
      std::memcpy(a, b, row);
      std::memcpy(b, tmp.data(), row);
    }
  }
}

std::vector<uint8_t> ResizeFrames(const uint8_t* frames, int64_t count,
                                  int64_t h, int64_t w, int64_t out_h,
                                  int64_t out_w) {
  std::vector<uint8_t> out(static_cast<size_t>(count * out_h * out_w * 3));
  const bool whole = h % out_h == 0 && w % out_w == 0;
  for (int64_t f = 0; f < count; ++f) {
    const uint8_t* in = frames + f * h * w * 3;
    uint8_t* o = out.data() + f * out_h * out_w * 3;
    if (whole) {
      AreaResize(in, h, w, out_h, out_w, o);
    } else {
      BilinearResize(in, h, w, out_h, out_w, o);
    }
  }
  return out;
}

std::vector<float> QuatsToAxisAngles(const float* quats, int64_t count) {
  constexpr double kPi = 3.14159265358979323846;
  std::vector<float> out(static_cast<size_t>(count * 3), 0.0f);
  for (int64_t i = 0; i < count; ++i) {
    const float* q = quats + i * 4;
    const double x = q[0], y = q[1], z = q[2], w = q[3];
    const double sin_half = std::sqrt(x * x + y * y + z * z);
    if (sin_half < 1e-12) continue;  // no rotation
    double angle = 2.0 * std::atan2(sin_half, w);
    if (angle > kPi) angle -= 2.0 * kPi;  // the shorter way, as MuJoCo
    for (int k = 0; k < 3; ++k) {
      out[static_cast<size_t>(i * 3 + k)] =
          static_cast<float>(q[k] / sin_half * angle);
    }
  }
  return out;
}

}  // namespace rlvla3
