// File: services/learner/kl_adaptive_lr.h
// -----------------------------------------------------------------------------
// KlAdaptiveLr: the learner's adaptive step size for the policy weights (as
// rsl_rl's PPO). While an update trains, its largest micro-batch is kept as a
// probe together with its log-probs before the step (Record); after the
// optimizer step the caller evaluates the probe again and StepKl estimates
// KL(before || after) per action token (a decision's KL over its executed
// steps x action dimensions). Adapt then divides the rate by `factor`
// when that KL exceeds 2 x target_kl and multiplies it by `factor` below
// target_kl / 2, within [lr_min, lr_max]. target_kl = 0 keeps the rate fixed
// and records no probe. It owns no optimizer: the caller hands the rate on.
//
// Example:
//   KlAdaptiveLr rate(options);
//   rate.Record(in, tokens, mask, log_probs);  // each micro-batch
//   optimizer.step();
//   if (rate.has_probe()) {
//     const at::Tensor after =
//         policy.Evaluate(rate.probe_input(), rate.probe_tokens()).log_probs;
//     SetLearningRate(rate.Adapt(rate.StepKl(after)));
//   }
//   rate.ClearProbe();
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_LEARNER_KL_ADAPTIVE_LR_H_
#define RLVLA3_SERVICES_LEARNER_KL_ADAPTIVE_LR_H_

#include <ATen/core/Tensor.h>

#include "policies/policy.h"

namespace rlvla3 {

struct KlAdaptiveLrOptions {
  double lr = 1e-4;        // the starting rate
  double target_kl = 0.0;  // 0: the rate stays `lr`
  double lr_min = 1e-7, lr_max = 1e-3, factor = 1.5;
};

class KlAdaptiveLr {
 public:
  explicit KlAdaptiveLr(const KlAdaptiveLrOptions& options)
      : options_(options), lr_(options.lr) {}

  bool enabled() const { return options_.target_kl > 0; }
  // The weights' current rate; set_lr restores one from a checkpoint.
  double lr() const { return lr_; }
  void set_lr(double lr) { lr_ = lr; }

  // Keeps a micro-batch as the probe unless one at least as large is kept
  // (enabled only; else a no-op): its
  // inputs, taken tokens, executed-step mask [B, K] and the log-probs of its
  // executed steps summed per decision [B] before the step.
  void Record(const PolicyInput& in, const at::Tensor& tokens,
              const at::Tensor& mask, const at::Tensor& log_probs);
  bool has_probe() const { return log_probs_.defined(); }
  const PolicyInput& probe_input() const { return in_; }
  const at::Tensor& probe_tokens() const { return tokens_; }
  // k3 estimate of KL(before || after) per action token, from the probe's
  // per-step log-probs [B, K] after the step (reads it to the host).
  double StepKl(const at::Tensor& log_probs_after) const;
  // The rate after a step of KL `step_kl` (non-finite: unchanged).
  double Adapt(double step_kl);
  // Forgets the probe of this update.
  void ClearProbe();

 private:
  KlAdaptiveLrOptions options_;
  double lr_;
  PolicyInput in_;
  at::Tensor tokens_, mask_, log_probs_;
};

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_LEARNER_KL_ADAPTIVE_LR_H_
