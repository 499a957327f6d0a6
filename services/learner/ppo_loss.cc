#include "services/learner/ppo_loss.h"

#include <torch/torch.h>

namespace rlvla3 {

PpoLossTerms DecoupledPpoLoss(const PpoLossInput& in, const PpoLossOptions& o) {
  PpoLossTerms t;
  const bool per_step = in.mask.defined();
  // Per step: means over the executed steps of each decision.
  const at::Tensor steps =
      per_step ? in.mask.sum(1).clamp_min(1) : at::Tensor();
  auto per_decision = [&](const at::Tensor& x) {
    return per_step ? (x * in.mask).sum(1) / steps : x;
  };
  const at::Tensor prox = in.prox_log_probs.detach();
  const at::Tensor behav = in.behav_log_probs.detach();
  at::Tensor adv = in.advantages.detach();
  if (o.negative_advantage_weight != 1.0) {
    adv = torch::where(adv < 0, adv * o.negative_advantage_weight, adv);
  }
  const at::Tensor adv_k = per_step ? adv.unsqueeze(1) : adv;
  const at::Tensor w = in.weights.detach();
  const double high = o.clip_eps_high > 0 ? o.clip_eps_high : o.clip_eps;
  const at::Tensor ratio = torch::exp(in.log_probs - prox);
  const at::Tensor clipped_ratio =
      torch::clamp(ratio, 1.0 - o.clip_eps, 1.0 + high);
  const at::Tensor is = torch::clamp_max(torch::exp(prox - behav), o.is_cap);
  const at::Tensor surrogate =
      per_decision(torch::min(ratio * adv_k, clipped_ratio * adv_k) * is);
  const at::Tensor policy_loss = -(surrogate * w).sum();
  at::Tensor loss = policy_loss;
  if (o.value_coef > 0 && in.values.defined()) {
    const at::Tensor vl =
        0.5 * ((in.values - in.returns.detach()).pow(2) * w).sum();
    loss = loss + o.value_coef * vl;
    t.value_loss = vl.detach();
  } else {
    // On the loss's device and in its type: the step's statistics are
    // stacked into one tensor for their one host read (GRPO on a GPU).
    t.value_loss = torch::zeros({}, policy_loss.options());
  }
  const at::Tensor ent = (in.entropy * w).sum();
  if (o.entropy_coef > 0) loss = loss - o.entropy_coef * ent;
  t.loss = loss;
  t.policy_loss = policy_loss.detach();
  t.entropy = ent.detach();
  const at::Tensor r = ratio.detach();
  t.ratio = per_decision(r);
  t.is_weight = per_decision(is.detach());
  // The clip is active where min() picks the clipped term: no gradient flows.
  t.clipped = per_decision(
      torch::logical_or(torch::logical_and(adv_k > 0, r > 1.0 + high),
                        torch::logical_and(adv_k < 0, r < 1.0 - o.clip_eps))
          .to(torch::kFloat));
  const at::Tensor kl = behav - in.log_probs.detach();
  t.approx_kl = per_step ? (kl * in.mask).sum(1) : kl;
  return t;
}

at::Tensor ProxKlSum(const at::Tensor& log_probs,
                     const at::Tensor& prox_log_probs, const at::Tensor& mask,
                     bool per_step) {
  const at::Tensor log_r = (log_probs - prox_log_probs).detach();
  if (!per_step) {
    const at::Tensor d = log_r.sum(1);
    return ((d.exp() - 1) - d).sum();
  }
  return (((log_r.exp() - 1) - log_r) * mask).sum();
}

}  // namespace rlvla3
