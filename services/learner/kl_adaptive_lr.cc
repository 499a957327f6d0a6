// KlAdaptiveLr (kl_adaptive_lr.h): the probe a learner update keeps, the k3
// estimate of its step's KL(before || after), and the rate's adaptation to
// that KL within [lr_min, lr_max].
#include "services/learner/kl_adaptive_lr.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>

namespace rlvla3 {

void KlAdaptiveLr::Record(const PolicyInput& in, const at::Tensor& tokens,
                          const at::Tensor& mask, const at::Tensor& log_probs) {
  if (!enabled()) return;
  // The update's largest micro-batch: not a short leftover.
  if (has_probe() && log_probs.size(0) <= log_probs_.size(0)) return;
  in_ = in;
  tokens_ = tokens;
  mask_ = mask;
  log_probs_ = log_probs.detach();
}

double KlAdaptiveLr::StepKl(const at::Tensor& log_probs_after) const {
  // k3 estimator of KL(before || after) on actions drawn from (about) the
  // policy before the step: r - 1 - log r >= 0, r = p_after / p_before; per
  // decision, then per action token (its executed steps x dimensions).
  const at::Tensor log_r = (log_probs_after * mask_).sum(1) - log_probs_;
  const at::Tensor tokens = mask_.sum() * static_cast<double>(tokens_.size(-1));
  return (((log_r.exp() - 1) - log_r).sum() / tokens.clamp_min(1))
      .item<double>();
}

double KlAdaptiveLr::Adapt(double step_kl) {
  if (!std::isfinite(step_kl)) return lr_;
  if (step_kl > 2 * options_.target_kl) {
    lr_ = std::max(options_.lr_min, lr_ / options_.factor);
  } else if (step_kl < options_.target_kl / 2) {
    lr_ = std::min(options_.lr_max, lr_ * options_.factor);
  }
  return lr_;
}

void KlAdaptiveLr::ClearProbe() {
  in_ = PolicyInput();
  tokens_ = mask_ = log_probs_ = at::Tensor();
}

}  // namespace rlvla3
