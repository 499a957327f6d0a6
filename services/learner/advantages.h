// File: services/learner/advantages.h
// -----------------------------------------------------------------------------
// Advantage estimators of the learner, on plain arrays (no LibTorch):
//   - GAE (Schulman et al. 2016) over one trajectory segment, PPO's estimator;
//   - group-normalised returns (GRPO, Shao et al. 2024): G episodes from the
//     same initial state, each episode's advantage is its return minus the
//     group mean, divided by the group's standard deviation.
//
// Example:
//   float adv[T], ret[T];
//   ComputeGae(rewards, values, terminal, bootstrap, 0.99f, 0.95f, adv, ret);
//   std::vector<float> a = GroupNormalizedAdvantages({1, 0, 0, 1});
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_LEARNER_ADVANTAGES_H_
#define RLVLA3_SERVICES_LEARNER_ADVANTAGES_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"

namespace rlvla3 {

// GAE over T decisions. terminal[t] != 0: the episode ended after decision t,
// so nothing is bootstrapped through it. `bootstrap_value` is V of the state
// after the last decision (ignored if that decision was terminal).
// advantages[t] and returns[t] = advantages[t] + values[t] are written.
void ComputeGae(absl::Span<const float> rewards, absl::Span<const float> values,
                absl::Span<const uint8_t> terminal, float bootstrap_value,
                float gamma, float lambda, absl::Span<float> advantages,
                absl::Span<float> returns);

// (r_i - mean(r)) / (max(std(r), std_floor) + eps) over one group; all
// zeros if every return is equal (no learning signal from that group). std
// is the population std. The floor keeps a group whose returns differ by
// little (graded outcomes: failures a hair apart) from scaling that
// difference up to a full-size advantage.
std::vector<float> GroupNormalizedAdvantages(absl::Span<const float> returns,
                                             float eps = 1e-6f,
                                             float std_floor = 0.0f);

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_LEARNER_ADVANTAGES_H_
