// The learner's step size in the units of its policy's actions: the step KL
// of the adaptive rate and the epochs' KL are per action token (a decision's
// KL over its executed steps x action dimensions), the adaptive rate's probe
// is the update's largest micro-batch (not a short leftover), and kl_stop
// ends an update whose policy moved too far from the proximal one.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <memory>

#include "services/learner/kl_adaptive_lr.h"
#include "services/learner/learner_core.h"
#include "tests/services/learner/learner_fixture.h"
#include "tests/services/learner/small_learner.h"

namespace rlvla3 {
namespace {

using testutil::Fill;
using testutil::LearnerTest;
using testutil::SmallNet;

KlAdaptiveLrOptions Adaptive() {
  KlAdaptiveLrOptions o;
  o.target_kl = 0.01;
  return o;
}

// A probe of `b` decisions of 4 chunk steps x 7 dimensions, 2 executed.
void RecordProbe(KlAdaptiveLr* rate, int64_t b, float before) {
  at::Tensor mask = torch::zeros({b, 4});
  mask.narrow(1, 0, 2).fill_(1);
  rate->Record(PolicyInput(), torch::zeros({b, 4, 7}, torch::kLong), mask,
               torch::full({b}, 2 * before));
}

TEST(KlAdaptiveLr, StepKlIsPerActionToken) {
  KlAdaptiveLr rate(Adaptive());
  RecordProbe(&rate, 3, -1.0f);
  // After the step each executed step's log-prob rose by 0.05: a decision's
  // log-ratio is 0.1, its k3 KL e^0.1 - 1 - 0.1, over 2 x 7 tokens.
  const at::Tensor after = torch::full({3, 4}, -0.95f);
  const double per_decision = std::exp(0.1) - 1 - 0.1;
  EXPECT_NEAR(rate.StepKl(after), per_decision / 14, 1e-7);
}

TEST(KlAdaptiveLr, TheProbeIsTheLargestMicroBatch) {
  KlAdaptiveLr rate(Adaptive());
  RecordProbe(&rate, 4, -1.0f);
  RecordProbe(&rate, 1, -5.0f);  // the short leftover comes last
  ASSERT_TRUE(rate.has_probe());
  EXPECT_EQ(rate.probe_tokens().size(0), 4);
  const at::Tensor after = torch::full({4, 4}, -1.0f);
  EXPECT_NEAR(rate.StepKl(after), 0.0, 1e-9);  // measured on the first
  rate.ClearProbe();
  EXPECT_FALSE(rate.has_probe());
}

// A minibatch whose KL(prox || theta) per token exceeds kl_stop is not
// stepped and ends the update: the first minibatch (ratio 1, KL 0) steps,
// the second, after a large step, stops, read from its forward before its
// backward is paid for (issue 59). Without kl_stop every epoch runs.
TEST_F(LearnerTest, KlStopEndsTheUpdateAtTheFirstMinibatchOverIt) {
  options_.ppo_epochs = 4;
  options_.minibatches = 2;
  options_.lr = 0.05;
  options_.normalize_advantages = false;
  for (const double stop : {0.0, 1e-9}) {
    options_.kl_stop = stop;
    torch::manual_seed(3);
    LearnerCore l(Wrap(TinyVLA(SmallNet())), text_, lens_, options_, 0);
    Fill(segs_[0].get(), 4, 0, 0);
    Fill(segs_[1].get(), 4, 0, 1);
    l.Add({segs_[0].get(), segs_[1].get()});
    while (l.CanTrain()) l.TrainMicroBatch();
    ASSERT_TRUE(l.ReadyToStep());
    const LearnerStepStats st = l.Step();
    l.TakeConsumed();
    ASSERT_FALSE(st.skipped);
    EXPECT_EQ(st.version, 1u);
    if (stop == 0) {
      EXPECT_FALSE(st.kl_stopped);
      EXPECT_EQ(st.optimizer_steps, 8);
      EXPECT_EQ(st.backward_passes, 8);  // 4 samples per minibatch, 4 per mb
      ASSERT_EQ(st.epoch_token_kl.size(), 4u);
      EXPECT_GT(st.epoch_token_kl[3], 1e-9);
    } else {
      EXPECT_TRUE(st.kl_stopped);
      EXPECT_EQ(st.optimizer_steps, 1);
      EXPECT_EQ(st.backward_passes, 1);  // the stopped one ran no backward
      ASSERT_EQ(st.epoch_token_kl.size(), 1u);
    }
    EXPECT_GT(st.token_kl, 0.0);
  }
}

// The anchor: with nothing to gain (zero advantages), ref_kl_coef pulls a
// policy that drifted from its starting weights back towards them, and the
// reported KL(current || start) per token falls.
TEST_F(LearnerTest, TheAnchorPullsThePolicyBackToItsStart) {
  options_.ppo_epochs = 2;
  options_.minibatches = 1;
  options_.lr = 1e-2;
  options_.normalize_advantages = false;
  options_.ref_kl_coef = 1.0;
  torch::manual_seed(4);
  LearnerCore l(Wrap(TinyVLA(SmallNet())), text_, lens_, options_, 0);
  {
    torch::NoGradGuard no_grad;  // drift from the reference
    for (const auto& p : NetOf(l)->named_parameters()) {
      if (p.key().rfind("action_head.", 0) == 0)
        p.value().add_(torch::randn_like(p.value()) * 0.3);
    }
  }
  std::vector<double> kl;
  for (int update = 0; update < 6; ++update) {
    for (int i = 0; i < 2; ++i) {
      Fill(segs_[i].get(), 4, l.version(), 10 * update + i);
      for (float& r : segs_[i]->rewards) r = 0;  // zero advantages:
      segs_[i]->has_bootstrap = false;           // no return, no value
      segs_[i]->terminal[3] = 1;                 // to bootstrap from
    }
    l.Add({segs_[0].get(), segs_[1].get()});
    while (l.CanTrain()) l.TrainMicroBatch();
    ASSERT_TRUE(l.ReadyToStep());
    kl.push_back(l.Step().ref_kl);
    l.TakeConsumed();
  }
  EXPECT_GT(kl.front(), 0.0);
  EXPECT_LT(kl.back(), 0.5 * kl.front());
}

}  // namespace
}  // namespace rlvla3
