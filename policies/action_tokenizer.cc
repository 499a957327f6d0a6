#include "policies/action_tokenizer.h"

#include <algorithm>
#include <cmath>

namespace rlvla3 {

int64_t ActionTokenizer::Encode(float a) const {
  if (std::isnan(a)) return bins_ / 2;
  const float c = std::clamp(a, -1.0f, 1.0f);
  const auto t = static_cast<int64_t>(std::floor((c + 1.0f) / bin_width()));
  return std::clamp<int64_t>(t, 0, bins_ - 1);
}

float ActionTokenizer::Decode(int64_t token) const {
  const int64_t t = std::clamp<int64_t>(token, 0, bins_ - 1);
  return -1.0f + (static_cast<float>(t) + 0.5f) * bin_width();
}

}  // namespace rlvla3
