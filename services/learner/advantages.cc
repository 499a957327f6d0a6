#include "services/learner/advantages.h"

#include <algorithm>
#include <cmath>

namespace rlvla3 {

void ComputeGae(absl::Span<const float> rewards, absl::Span<const float> values,
                absl::Span<const uint8_t> terminal, float bootstrap_value,
                float gamma, float lambda, absl::Span<float> advantages,
                absl::Span<float> returns) {
  const size_t n = rewards.size();
  float next_value = bootstrap_value;
  float running = 0.0f;
  for (size_t i = n; i-- > 0;) {
    const float keep = terminal[i] ? 0.0f : 1.0f;
    const float delta = rewards[i] + gamma * next_value * keep - values[i];
    running = delta + gamma * lambda * keep * running;
    advantages[i] = running;
    returns[i] = running + values[i];
    next_value = values[i];
  }
}

std::vector<float> GroupNormalizedAdvantages(absl::Span<const float> returns,
                                             float eps, float std_floor) {
  std::vector<float> out(returns.size(), 0.0f);
  if (returns.empty()) return out;
  double mean = 0;
  for (float r : returns) mean += r;
  mean /= static_cast<double>(returns.size());
  double var = 0;
  for (float r : returns) var += (r - mean) * (r - mean);
  const double raw = std::sqrt(var / static_cast<double>(returns.size()));
  if (raw == 0.0) return out;
  const double sd = std::max(raw, static_cast<double>(std_floor));
  for (size_t i = 0; i < returns.size(); ++i) {
    out[i] = static_cast<float>((returns[i] - mean) / (sd + eps));
  }
  return out;
}

}  // namespace rlvla3
