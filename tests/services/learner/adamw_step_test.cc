// StepAdamW against LibTorch's own AdamW: the same parameters, gradients and
// groups, stepped side by side, stay equal to the bit on a CPU; ClipGradNorm
// against clip_grad_norm_.
#include "services/learner/adamw_step.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <vector>

namespace rlvla3 {
namespace {

std::vector<at::Tensor> Params(int64_t seed) {
  torch::manual_seed(seed);
  std::vector<at::Tensor> p;
  for (int64_t n : {7, 33, 1, 128}) {
    p.push_back(torch::randn({n, 3}).requires_grad_(true));
  }
  return p;
}

std::unique_ptr<torch::optim::AdamW> Make(std::vector<at::Tensor>& p) {
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(std::vector<at::Tensor>{p[0], p[1]},
                      std::make_unique<torch::optim::AdamWOptions>(
                          torch::optim::AdamWOptions(1e-2).weight_decay(0.1)));
  groups.emplace_back(std::vector<at::Tensor>{p[2], p[3]},
                      std::make_unique<torch::optim::AdamWOptions>(
                          torch::optim::AdamWOptions(3e-3).weight_decay(0)));
  return std::make_unique<torch::optim::AdamW>(groups,
                                               torch::optim::AdamWOptions());
}

TEST(AdamWStep, MatchesLibTorchsAdamWBitForBitOverStepsAndGroups) {
  std::vector<at::Tensor> ours = Params(1), theirs = Params(1);
  auto opt_ours = Make(ours), opt_theirs = Make(theirs);
  for (int step = 0; step < 5; ++step) {
    torch::manual_seed(100 + step);
    for (size_t i = 0; i < ours.size(); ++i) {
      // The third parameter gets no gradient at step 2: its step count lags
      // the others' from then on (a bucket of its own).
      if (step == 2 && i == 2) continue;
      const at::Tensor g = torch::randn_like(ours[i]);
      ours[i].mutable_grad() = g.clone();
      theirs[i].mutable_grad() = g.clone();
    }
    StepAdamW(*opt_ours);
    opt_theirs->step();
    for (auto* ps : {&ours, &theirs}) {
      for (at::Tensor& p : *ps) p.mutable_grad() = at::Tensor();
    }
    for (size_t i = 0; i < ours.size(); ++i) {
      EXPECT_TRUE(torch::equal(ours[i], theirs[i]))
          << "parameter " << i << " after step " << step;
      const auto* a = FindAdamWState(*opt_ours, ours[i]);
      const auto* b = FindAdamWState(*opt_theirs, theirs[i]);
      ASSERT_NE(a, nullptr);
      ASSERT_NE(b, nullptr);
      EXPECT_EQ(a->step(), b->step());
      EXPECT_TRUE(torch::equal(a->exp_avg_sq(), b->exp_avg_sq()));
    }
  }
  EXPECT_EQ(FindAdamWState(*opt_ours, ours[2])->step(), 4);
}

TEST(AdamWStep, ClipGradNormScalesAsLibTorchsClipGradNorm) {
  std::vector<at::Tensor> a = Params(2), b = Params(2);
  std::vector<at::Tensor> ga, gb;
  for (size_t i = 0; i < a.size(); ++i) {
    const at::Tensor g = torch::randn_like(a[i]) * 3;
    ga.push_back(g.clone());
    b[i].mutable_grad() = g.clone();
  }
  const at::Tensor norm = ClipGradNorm(ga, 1.0);
  const double expected = torch::nn::utils::clip_grad_norm_(b, 1.0);
  EXPECT_NEAR(norm.item<double>(), expected, 1e-5 * expected);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(torch::allclose(ga[i], b[i].grad(), 1e-6, 1e-7)) << i;
  }
  // Under the limit nothing moves.
  std::vector<at::Tensor> small = {torch::full({4}, 0.01)};
  ClipGradNorm(small, 1.0);
  EXPECT_TRUE(torch::equal(small[0], torch::full({4}, 0.01)));
}

TEST(AdamWStep, ZeroParameterGradientsKeepsThemAllocated) {
  std::vector<at::Tensor> p = Params(3);
  p[0].mutable_grad() = torch::ones_like(p[0]);
  const void* storage = p[0].grad().data_ptr();
  ZeroParameterGradients(p);
  EXPECT_TRUE(torch::equal(p[0].grad(), torch::zeros_like(p[0])));
  EXPECT_EQ(p[0].grad().data_ptr(), storage);
  EXPECT_FALSE(p[1].grad().defined());
}

}  // namespace
}  // namespace rlvla3
