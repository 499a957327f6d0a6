// File: services/learner/ppo_loss.h
// -----------------------------------------------------------------------------
// The learner's decoupled PPO objective (Hilton et al. 2022, as in AReaL):
//   ratio  = pi_theta(a|s) / pi_prox(a|s)      (clip: [1 - eps, 1 + eps_high])
//   weight = min(pi_prox(a|s) / pi_behav(a|s), is_cap)  (truncated IS)
//   L_pi   = -weight * min(ratio * A, clip(ratio) * A)
// where pi_behav produced the sample (possibly several versions old) and
// pi_prox is the learner's policy before the current optimizer step. Negative
// advantages can be scaled down (negative_advantage_weight < 1): pushing a
// sampled action token down moves its probability onto all other bins of a
// 256-bin head and widens the distribution, while pushing a good one up
// sharpens it; at 0 the objective imitates the policy's own better-than-
// expected decisions only (self-imitation, Oh et al. 2018). Plus a
// value loss (PPO; none for GRPO) and an entropy bonus. Each sample has a loss
// weight (1 / samples in the global batch), so micro-batch gradients add up to
// the global-batch mean.
//
// Example:
//   PpoLossTerms t = DecoupledPpoLoss(in, options);
//   t.loss.backward();
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_LEARNER_PPO_LOSS_H_
#define RLVLA3_SERVICES_LEARNER_PPO_LOSS_H_

#include <ATen/core/Tensor.h>

namespace rlvla3 {

struct PpoLossOptions {
  double clip_eps = 0.2;        // lower clip: ratio >= 1 - clip_eps
  double clip_eps_high = 0.28;  // upper clip (DAPO's clip-higher); 0: clip_eps
  double is_cap = 2.0;
  double value_coef = 0.5;  // 0: no value loss (GRPO)
  double entropy_coef = 0.0;
  double negative_advantage_weight = 1.0;  // scale of A < 0 (1: plain PPO)
};

// Per-sample float32 [B] tensors; log_probs, values and entropy carry autograd.
// With `mask` ([B, K], 1 on the executed chunk steps) the three log-prob
// tensors are per chunk step, [B, K] (0 where not executed): the ratio, its
// clip and the IS weight are then per step and the surrogate is their mean
// over each decision's executed steps (RLinf's action level: a step's 7
// dimensions share one ratio) instead of one ratio of the decision's summed
// log-probs, whose clip binds ~K times earlier.
struct PpoLossInput {
  at::Tensor mask;
  at::Tensor log_probs;        // log pi_theta of the taken action
  at::Tensor prox_log_probs;   // log pi_prox (no grad)
  at::Tensor behav_log_probs;  // log pi_behav, recorded by the actor
  at::Tensor advantages;
  at::Tensor returns;  // value targets (undefined if value_coef is 0)
  at::Tensor values;   // critic output (undefined if value_coef is 0)
  at::Tensor entropy;
  at::Tensor weights;  // per-sample loss weight
};

// Everything stays a tensor: reading them costs a host sync, so the learner
// reads them once per optimizer step, not per micro-batch.
struct PpoLossTerms {
  at::Tensor loss;                              // scalar, differentiable
  at::Tensor policy_loss, value_loss, entropy;  // scalars (detached)
  // Per step: the means over each decision's executed steps.
  at::Tensor clipped;    // [B] 1 where the clip is active
  at::Tensor is_weight;  // [B] truncated behaviour IS weight
  at::Tensor ratio;      // [B] pi_theta / pi_prox (detached)
  at::Tensor approx_kl;  // [B] log pi_behav - log pi_theta (detached)
  // Set by the learner (not DecoupledPpoLoss): the k3 estimate of
  // KL(prox || theta) summed over the micro-batch (ProxKlSum), and the
  // action tokens it holds (executed steps x action dimensions), for a KL
  // per token.
  at::Tensor prox_kl_sum, tokens;
  // Set by the learner's anchor (else zero): k3 of KL(theta || reference),
  // summed over executed steps and decisions.
  at::Tensor ref_kl_sum;
};

PpoLossTerms DecoupledPpoLoss(const PpoLossInput& in,
                              const PpoLossOptions& options);

// The k3 estimate of KL(prox || theta), summed over a micro-batch, in the
// units the clip uses: with `per_step` one estimate per executed chunk step
// (a step's log-ratio summed over its action dimensions, as its ratio is),
// else one per decision (the log-ratio summed over its executed steps).
// `log_probs` and `prox_log_probs` are [B, K], 0 where `mask` is 0; the sum
// is detached. Divided by the action tokens, it is rl.kl_stop's figure.
at::Tensor ProxKlSum(const at::Tensor& log_probs,
                     const at::Tensor& prox_log_probs, const at::Tensor& mask,
                     bool per_step);

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_LEARNER_PPO_LOSS_H_
