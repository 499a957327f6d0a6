// File: policies/action_tokenizer.h
// -----------------------------------------------------------------------------
// ActionTokenizer: maps continuous actions in [-1, 1] to discrete tokens and
// back, OpenVLA style: each dimension is cut into `bins` equal-width bins
// (256 by default) and a token is a bin index. Token -> action returns the bin
// centre, so Decode(Encode(a)) is within half a bin width of clamp(a).
// Discrete action tokens make the policy's log-probabilities exact.
//
// Example:
//   ActionTokenizer tok;                         // 256 bins over [-1, 1]
//   int64_t t = tok.Encode(0.3f);                // 166
//   float a = tok.Decode(t);                     // 0.30196
// -----------------------------------------------------------------------------
#ifndef RLVLA3_POLICIES_ACTION_TOKENIZER_H_
#define RLVLA3_POLICIES_ACTION_TOKENIZER_H_

#include <cstdint>

namespace rlvla3 {

class ActionTokenizer {
 public:
  static constexpr int kDefaultBins = 256;

  explicit ActionTokenizer(int bins = kDefaultBins)
      : bins_(bins < 2 ? 2 : bins) {}

  int bins() const { return bins_; }
  // Bin index of `a` after clamping to [-1, 1]; NaN maps to the middle bin.
  int64_t Encode(float a) const;
  // Centre of bin `token` (clamped to [0, bins)).
  float Decode(int64_t token) const;
  // Width of one bin (2 / bins).
  float bin_width() const { return 2.0f / static_cast<float>(bins_); }

 private:
  int bins_;
};

}  // namespace rlvla3

#endif  // RLVLA3_POLICIES_ACTION_TOKENIZER_H_
