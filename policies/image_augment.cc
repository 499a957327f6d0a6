#include "policies/image_augment.h"

#include <torch/torch.h>

namespace rlvla3 {

at::Tensor RandomShift(const at::Tensor& images, int64_t pad,
                       std::mt19937_64* rng) {
  if (pad <= 0) return images;
  TORCH_CHECK(images.dim() == 4, "RandomShift: expected [B, H, W, C], got ",
              images.sizes());
  const int64_t B = images.size(0), H = images.size(1), W = images.size(2);
  // Edge-replicating pad through index lists: row r of the padded image is
  // row clamp(r - pad, 0, H - 1) of the original (works for any dtype).
  const at::Tensor rows =
      torch::clamp(torch::arange(-pad, H + pad, torch::kLong), 0, H - 1);
  const at::Tensor cols =
      torch::clamp(torch::arange(-pad, W + pad, torch::kLong), 0, W - 1);
  const at::Tensor padded = images.index_select(1, rows).index_select(2, cols);
  at::Tensor out = torch::empty_like(images);
  std::uniform_int_distribution<int64_t> offset(0, 2 * pad);
  for (int64_t b = 0; b < B; ++b) {
    const int64_t dy = offset(*rng), dx = offset(*rng);
    out[b].copy_(padded[b].narrow(0, dy, H).narrow(1, dx, W));
  }
  return out;
}

}  // namespace rlvla3
