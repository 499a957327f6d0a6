#include "services/learner/ppo_loss.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

namespace rlvla3 {
namespace {

PpoLossInput Input(float logp, float prox, float behav, float adv) {
  PpoLossInput in;
  in.log_probs = torch::tensor({logp}).requires_grad_(true);
  in.prox_log_probs = torch::tensor({prox});
  in.behav_log_probs = torch::tensor({behav});
  in.advantages = torch::tensor({adv});
  in.entropy = torch::zeros({1});
  in.weights = torch::ones({1});
  return in;
}

// Plain PPO's symmetric clip, no value term (a test asks for clip-higher).
PpoLossOptions NoValue() {
  PpoLossOptions o;
  o.clip_eps = 0.2;
  o.clip_eps_high = 0;
  o.is_cap = 2.0;
  o.value_coef = 0;
  return o;
}

TEST(PpoLoss, WithoutAValueTermItsZeroTakesTheLossesTypeAndDevice) {
  // GRPO: the value loss is a zero stacked with the other statistics for one
  // host read, so it must match them (on a GPU, the device; here the type).
  PpoLossInput in = Input(0.1f, 0.0f, 0.0f, 2.0f);
  for (at::Tensor* t : {&in.log_probs, &in.prox_log_probs, &in.behav_log_probs,
                        &in.advantages, &in.entropy, &in.weights}) {
    *t = t->detach().to(torch::kDouble);
  }
  const PpoLossTerms t = DecoupledPpoLoss(in, NoValue());
  EXPECT_EQ(t.value_loss.scalar_type(), torch::kDouble);
  EXPECT_EQ(t.value_loss.device(), t.loss.device());
  EXPECT_NO_THROW(torch::stack({t.policy_loss, t.value_loss, t.entropy}));
}

TEST(PpoLoss, UnclippedRatioGivesPolicyGradient) {
  // ratio = e^0.1 = 1.105 (inside 1 +- 0.2), A = 2, on-policy (w = 1).
  PpoLossInput in = Input(0.1f, 0.0f, 0.0f, 2.0f);
  PpoLossTerms t = DecoupledPpoLoss(in, NoValue());
  EXPECT_NEAR(t.loss.item<float>(), -2.0f * std::exp(0.1f), 1e-5);
  t.loss.backward();
  // d/dlogp of -ratio*A = -ratio*A.
  EXPECT_NEAR(in.log_probs.grad().item<float>(), -2.0f * std::exp(0.1f), 1e-5);
  EXPECT_EQ(t.clipped.item<float>(), 0.0f);
}

TEST(PpoLoss, ClippedRatioStopsTheGradient) {
  // ratio = e^0.5 = 1.65 > 1.2 with A > 0: the clipped term wins, no grad.
  PpoLossInput in = Input(0.5f, 0.0f, 0.0f, 1.0f);
  PpoLossTerms t = DecoupledPpoLoss(in, NoValue());
  EXPECT_NEAR(t.loss.item<float>(), -1.2f, 1e-5);
  t.loss.backward();
  EXPECT_EQ(in.log_probs.grad().item<float>(), 0.0f);
  EXPECT_EQ(t.clipped.item<float>(), 1.0f);
  // Same ratio with A < 0: the unclipped (more pessimistic) term is used.
  PpoLossInput neg = Input(0.5f, 0.0f, 0.0f, -1.0f);
  PpoLossTerms tn = DecoupledPpoLoss(neg, NoValue());
  EXPECT_NEAR(tn.loss.item<float>(), std::exp(0.5f), 1e-5);
  EXPECT_EQ(tn.clipped.item<float>(), 0.0f);
  // ratio = e^-0.5 = 0.61 < 0.8 with A < 0: clipped at 0.8.
  PpoLossInput low = Input(-0.5f, 0.0f, 0.0f, -1.0f);
  PpoLossTerms tl = DecoupledPpoLoss(low, NoValue());
  EXPECT_NEAR(tl.loss.item<float>(), 0.8f, 1e-5);
  EXPECT_EQ(tl.clipped.item<float>(), 1.0f);
}

TEST(PpoLoss, BehaviourImportanceWeightIsTruncated) {
  // pi_prox / pi_behav = e^1.5 = 4.48 -> capped at 2.
  PpoLossInput in = Input(0.0f, 0.0f, -1.5f, 1.0f);
  PpoLossTerms t = DecoupledPpoLoss(in, NoValue());
  EXPECT_NEAR(t.is_weight.item<float>(), 2.0f, 1e-6);
  EXPECT_NEAR(t.loss.item<float>(), -2.0f, 1e-5);
  // Below the cap the weight is the ratio itself: e^0.5.
  PpoLossInput mid = Input(0.0f, 0.0f, -0.5f, 1.0f);
  PpoLossTerms tm = DecoupledPpoLoss(mid, NoValue());
  EXPECT_NEAR(tm.is_weight.item<float>(), std::exp(0.5f), 1e-5);
  // A newer behaviour policy (weight < 1) is not capped from below.
  PpoLossInput low = Input(0.0f, 0.0f, 0.7f, 1.0f);
  EXPECT_NEAR(DecoupledPpoLoss(low, NoValue()).is_weight.item<float>(),
              std::exp(-0.7f), 1e-5);
}

TEST(PpoLoss, NegativeAdvantagesAreScaledByTheirWeight) {
  PpoLossOptions o = NoValue();
  o.negative_advantage_weight = 0.25;
  // ratio 1, A = -2: the loss is -(1 * -2 * 0.25) = 0.5, gradient 0.5.
  PpoLossInput neg = Input(0.0f, 0.0f, 0.0f, -2.0f);
  PpoLossTerms tn = DecoupledPpoLoss(neg, o);
  EXPECT_NEAR(tn.loss.item<float>(), 0.5f, 1e-6);
  tn.loss.backward();
  EXPECT_NEAR(neg.log_probs.grad().item<float>(), 0.5f, 1e-6);
  // Positive advantages are untouched.
  PpoLossInput pos = Input(0.0f, 0.0f, 0.0f, 2.0f);
  EXPECT_NEAR(DecoupledPpoLoss(pos, o).loss.item<float>(), -2.0f, 1e-6);
  // At 0 a worse-than-expected decision gives no policy gradient.
  o.negative_advantage_weight = 0.0;
  PpoLossInput none = Input(0.3f, 0.0f, 0.0f, -1.0f);
  DecoupledPpoLoss(none, o).loss.backward();
  EXPECT_EQ(none.log_probs.grad().item<float>(), 0.0f);
}

TEST(PpoLoss, ValueAndEntropyTermsAndWeights) {
  PpoLossInput in = Input(0.0f, 0.0f, 0.0f, 0.0f);
  in.values = torch::tensor({1.0f}).requires_grad_(true);
  in.returns = torch::tensor({3.0f});
  in.entropy = torch::tensor({0.5f});
  in.weights = torch::tensor({0.25f});
  PpoLossOptions o = NoValue();
  o.value_coef = 0.5;
  o.entropy_coef = 0.1;
  PpoLossTerms t = DecoupledPpoLoss(in, o);
  // 0.5 * (0.5 * 4 * 0.25) - 0.1 * 0.5 * 0.25 = 0.25 - 0.0125
  EXPECT_NEAR(t.loss.item<float>(), 0.2375f, 1e-6);
}

// On a tiny policy (a linear layer over 4 actions), a sample whose ratio is
// clipped contributes nothing to the parameters' gradient: the gradient of a
// batch with one clipped and one unclipped sample equals the gradient of the
// unclipped sample alone.
TEST(PpoLoss, ClippedSamplesCarryNoGradientThroughATinyPolicy) {
  torch::manual_seed(1);
  torch::nn::Linear policy(3, 4);
  const at::Tensor obs = torch::randn({2, 3});
  const at::Tensor actions = torch::tensor({1, 2}, torch::kLong);
  auto grad_of = [&](const at::Tensor& keep) {
    policy->zero_grad();
    const at::Tensor logp = torch::log_softmax(policy->forward(obs), 1)
                                .gather(1, actions.unsqueeze(1))
                                .squeeze(1);
    PpoLossInput in;
    in.log_probs = logp;
    // Sample 0: proximal 0.6 nats below the current policy (ratio 1.82 >
    // 1.2) with A > 0, so clipped; sample 1: ratio 1, not clipped.
    const at::Tensor now = logp.detach();
    in.prox_log_probs = now - torch::tensor({0.6f, 0.0f});
    in.behav_log_probs = in.prox_log_probs;
    in.advantages = torch::tensor({1.0f, 1.0f});
    in.entropy = torch::zeros({2});
    in.weights = keep;
    PpoLossTerms t = DecoupledPpoLoss(in, NoValue());
    t.loss.backward();
    EXPECT_EQ(t.clipped[0].item<float>(), 1.0f);
    EXPECT_EQ(t.clipped[1].item<float>(), 0.0f);
    return policy->weight.grad().clone();
  };
  const at::Tensor both = grad_of(torch::tensor({1.0f, 1.0f}));
  const at::Tensor unclipped_only = grad_of(torch::tensor({0.0f, 1.0f}));
  const at::Tensor clipped_only = grad_of(torch::tensor({1.0f, 0.0f}));
  EXPECT_TRUE(torch::allclose(both, unclipped_only));
  EXPECT_EQ(clipped_only.abs().max().item<float>(), 0.0f);
  EXPECT_GT(unclipped_only.abs().max().item<float>(), 0.0f);
}

// Two executed chunk steps, each 0.15 nats more likely than under the
// proximal policy (a third, unexecuted step far off): per decision the ratio
// is e^0.3 = 1.35, past 1 + 0.28, so a positive advantage gets no gradient;
// per step each ratio is e^0.15 = 1.16, inside the clip, and it does.
TEST(PpoLoss, PerStepRatiosClipLaterThanTheDecisionsSummedRatio) {
  PpoLossOptions o = NoValue();
  o.clip_eps_high = 0.28;
  const at::Tensor mask = torch::tensor({{1.0f, 1.0f, 0.0f}});
  auto grad_of = [&](bool per_step, PpoLossTerms* terms) {
    const at::Tensor lp =
        torch::tensor({{0.15f, 0.15f, 5.0f}}).requires_grad_(true);
    PpoLossInput in;
    if (per_step) {
      in.mask = mask;
      in.log_probs = lp * mask;
      in.prox_log_probs = torch::zeros({1, 3});
      in.behav_log_probs = torch::zeros({1, 3});
    } else {
      in.log_probs = (lp * mask).sum(1);
      in.prox_log_probs = torch::zeros({1});
      in.behav_log_probs = torch::zeros({1});
    }
    in.advantages = torch::tensor({1.0f});
    in.entropy = torch::zeros({1});
    in.weights = torch::ones({1});
    *terms = DecoupledPpoLoss(in, o);
    terms->loss.backward();
    return lp.grad();
  };
  PpoLossTerms decision, step;
  const at::Tensor g_decision = grad_of(false, &decision);
  const at::Tensor g_step = grad_of(true, &step);
  EXPECT_FLOAT_EQ(decision.clipped.item<float>(), 1.0f);
  EXPECT_FLOAT_EQ(g_decision.abs().sum().item<float>(), 0.0f);
  EXPECT_FLOAT_EQ(step.clipped.item<float>(), 0.0f);
  EXPECT_NEAR(step.ratio.item<float>(), std::exp(0.15f), 1e-5);
  EXPECT_LT(g_step[0][0].item<float>(), 0.0f);        // descent raises it
  EXPECT_FLOAT_EQ(g_step[0][2].item<float>(), 0.0f);  // not executed
  EXPECT_NEAR(step.is_weight.item<float>(), 1.0f, 1e-6);
}

// Clip-higher: the upper side of the clip is its own (DAPO's 0.28), the
// lower stays at clip_eps.
TEST(PpoLoss, ClipHigherWidensOnlyTheUpperSide) {
  PpoLossOptions o = NoValue();
  o.clip_eps_high = 0.28;
  // ratio e^0.22 = 1.25: past 1.2, inside 1.28.
  EXPECT_FLOAT_EQ(
      DecoupledPpoLoss(Input(0.22f, 0, 0, 1.0f), o).clipped.item<float>(), 0);
  EXPECT_FLOAT_EQ(DecoupledPpoLoss(Input(0.22f, 0, 0, 1.0f), NoValue())
                      .clipped.item<float>(),
                  1);
  // ratio e^-0.25 = 0.78 < 0.8 with A < 0: clipped either way.
  EXPECT_FLOAT_EQ(
      DecoupledPpoLoss(Input(-0.25f, 0, 0, -1.0f), o).clipped.item<float>(), 1);
}

// rl.kl_stop's KL in the clip's units: per executed chunk step when the clip
// is per step. Steps that moved +0.3 and -0.3 nats cancel in the decision's
// summed log-ratio (k3 0) but not step by step; an unexecuted step counts
// nothing (issue 59).
TEST(PpoLoss, TheProxKlIsTakenInTheClipsUnits) {
  const at::Tensor mask = torch::tensor({{1.0f, 1.0f, 0.0f}});
  const at::Tensor prox = torch::tensor({{-1.0f, -1.0f, 0.0f}});
  const at::Tensor logp = torch::tensor({{-0.7f, -1.3f, 0.0f}});
  const double k3 = std::exp(0.3) - 1 - 0.3, k3m = std::exp(-0.3) - 1 + 0.3;
  EXPECT_NEAR(ProxKlSum(logp, prox, mask, /*per_step=*/true).item<double>(),
              k3 + k3m, 1e-6);
  EXPECT_NEAR(ProxKlSum(logp, prox, mask, /*per_step=*/false).item<double>(),
              0.0, 1e-6);
}

}  // namespace
}  // namespace rlvla3
