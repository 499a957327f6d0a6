// Action heads beyond 256 bins in [-1, 1] (issue 50, item 2): a diagonal
// Gaussian whose log-probability and entropy agree with the closed form on
// fixed inputs (computed here element by element in double), bins of
// different counts and ranges per dimension whose samples stay in range and
// whose log-probs are the chosen bins', TinyVLA's uniform layout giving
// TinyVLA's own numbers, and the linear map of a declared range onto the
// controller's [-1, 1].
#include "policies/action_head.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "policies/tiny_vla_policy.h"

namespace rlvla3 {
namespace {

ActionSpace Gaussian(int64_t size, double low, double high) {
  ActionSpace s;
  s.kind = ActionKind::kGaussian;
  s.size = size;
  s.low.assign(static_cast<size_t>(size), low);
  s.high.assign(static_cast<size_t>(size), high);
  return s;
}

ActionSpace Bins(std::vector<int64_t> bins, std::vector<double> low,
                 std::vector<double> high) {
  ActionSpace s;
  s.size = static_cast<int64_t>(bins.size());
  s.bins = std::move(bins);
  s.low = std::move(low);
  s.high = std::move(high);
  return s;
}

std::unique_ptr<ActionHead> Make(const ActionSpace& s) {
  absl::StatusOr<std::unique_ptr<ActionHead>> h = MakeActionHead(s);
  EXPECT_TRUE(h.ok()) << h.status();
  return h.ok() ? *std::move(h) : nullptr;
}

TEST(ActionHead, GaussianLogProbAndEntropyAreTheClosedFormOnFixedInputs) {
  const int64_t B = 2, K = 3, A = 4;
  std::unique_ptr<ActionHead> head = Make(Gaussian(A, -1, 1));
  ASSERT_EQ(head->width(), 2 * A);
  // Fixed numbers: means, log-stds (one below the clamp) and taken values.
  at::Tensor params = torch::empty({B, K, 2 * A});
  at::Tensor taken = torch::empty({B, K, A});
  auto p = params.accessor<float, 3>();
  auto x = taken.accessor<float, 3>();
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t k = 0; k < K; ++k) {
      for (int64_t d = 0; d < A; ++d) {
        p[b][k][d] = 0.1f * static_cast<float>(b - k + d);
        p[b][k][A + d] = -0.3f * static_cast<float>(d) + 0.2f * k - 0.1f * b;
        x[b][k][d] = 0.25f * static_cast<float>(d - b) + 0.05f * k;
      }
    }
  }
  p[1][2][A + 3] = -40.0f;  // below kMinLogStd: clamped to it
  params.requires_grad_(true);
  at::Tensor logp, entropy;
  head->Evaluate(params, taken, &logp, &entropy);
  ASSERT_EQ(logp.sizes(), (std::vector<int64_t>{B, K}));
  ASSERT_EQ(entropy.sizes(), (std::vector<int64_t>{B, K}));
  const double half_log_2pi = 0.5 * std::log(2.0 * M_PI);
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t k = 0; k < K; ++k) {
      double want_logp = 0, want_entropy = 0;
      for (int64_t d = 0; d < A; ++d) {
        const double m = p[b][k][d];
        const double ls = std::max<double>(p[b][k][A + d], -20.0);
        const double s = std::exp(ls);
        const double v = x[b][k][d];
        want_logp += -(v - m) * (v - m) / (2 * s * s) - ls - half_log_2pi;
        want_entropy += 0.5 + half_log_2pi + ls;
      }
      EXPECT_NEAR(logp[b][k].item<double>(), want_logp,
                  1e-4 * std::max(1.0, std::abs(want_logp)))
          << b << "," << k;
      EXPECT_NEAR(entropy[b][k].item<double>(), want_entropy, 1e-4)
          << b << "," << k;
    }
  }
  logp.sum().backward();  // PPO trains through it
  EXPECT_TRUE(params.grad().defined());
  EXPECT_GT(params.grad().abs().sum().item<double>(), 0.0);
}

TEST(ActionHead, GaussianSamplesFollowMeanAndStdAndGreedyTakesTheMean) {
  torch::manual_seed(7);
  std::unique_ptr<ActionHead> head = Make(Gaussian(2, -2, 2));
  at::Tensor params = torch::zeros({20000, 1, 4});
  params.select(-1, 0).fill_(0.5);             // mean of dimension 0
  params.select(-1, 3).fill_(std::log(0.25));  // std of dimension 1
  at::Tensor taken, logp, again;
  head->Sample(params, /*greedy=*/false, &taken, &logp);
  EXPECT_NEAR(taken.select(-1, 0).mean().item<double>(), 0.5, 0.03);
  EXPECT_NEAR(taken.select(-1, 0).std().item<double>(), 1.0, 0.03);
  EXPECT_NEAR(taken.select(-1, 1).std().item<double>(), 0.25, 0.01);
  head->Evaluate(params, taken, &again, nullptr);
  EXPECT_TRUE(torch::allclose(logp, again));
  head->Sample(params, /*greedy=*/true, &taken, &logp);
  EXPECT_TRUE(torch::equal(taken.select(-1, 0), params.select(-1, 0)));
}

TEST(ActionHead, PerDimensionBinsStayInRangeAndScoreTheChosenBins) {
  torch::manual_seed(3);
  // 3 bins over [0, 3], 5 over [-1, 1], 2 over [-0.5, 0.5].
  std::unique_ptr<ActionHead> head =
      Make(Bins({3, 5, 2}, {0.0, -1.0, -0.5}, {3.0, 1.0, 0.5}));
  ASSERT_EQ(head->width(), 10);
  const at::Tensor params = torch::randn({64, 2, 10});
  at::Tensor taken, logp;
  head->Sample(params, /*greedy=*/false, &taken, &logp);
  ASSERT_EQ(taken.sizes(), (std::vector<int64_t>{64, 2, 3}));
  const int64_t bins[] = {3, 5, 2};
  for (int64_t d = 0; d < 3; ++d) {
    EXPECT_GE(taken.select(-1, d).min().item<int64_t>(), 0) << d;
    EXPECT_LT(taken.select(-1, d).max().item<int64_t>(), bins[d]) << d;
    // Every bin is reached in 128 draws of near-uniform logits.
    EXPECT_EQ(taken.select(-1, d).max().item<int64_t>(), bins[d] - 1) << d;
  }
  // The log-prob is the sum of each dimension's log_softmax at its bin.
  at::Tensor want = torch::zeros({64, 2});
  int64_t offset = 0;
  for (int64_t d = 0; d < 3; ++d) {
    const at::Tensor lsm =
        torch::log_softmax(params.narrow(-1, offset, bins[d]), -1);
    want += lsm.gather(-1, taken.select(-1, d).unsqueeze(-1)).squeeze(-1);
    offset += bins[d];
  }
  EXPECT_TRUE(torch::allclose(logp, want, 1e-5, 1e-6));
  // Bin centres in each dimension's own range, and their controller values.
  const at::Tensor last =
      torch::tensor({2, 4, 1}, torch::kLong).view({1, 1, 3});
  const at::Tensor a = head->ToActions(last);
  EXPECT_NEAR(a[0][0][0].item<double>(), 2.5, 1e-6);
  EXPECT_NEAR(a[0][0][1].item<double>(), 0.8, 1e-6);
  EXPECT_NEAR(a[0][0][2].item<double>(), 0.25, 1e-6);
  const at::Tensor ctrl = head->ToControl(last);
  EXPECT_NEAR(ctrl[0][0][0].item<double>(), 2.5 / 3 * 2 - 1, 1e-6);
  EXPECT_NEAR(ctrl[0][0][1].item<double>(), 0.8, 1e-6);
  EXPECT_NEAR(ctrl[0][0][2].item<double>(), 0.5, 1e-6);
}

TEST(ActionHead, UniformBinsGiveTinyVLAsOwnNumbers) {
  torch::manual_seed(5);
  std::unique_ptr<ActionHead> head =
      Make(Bins(std::vector<int64_t>(7, 256), std::vector<double>(7, -1.0),
                std::vector<double>(7, 1.0)));
  const at::Tensor logits = torch::randn({3, 4, 7, 256});
  at::Tensor taken, logp, entropy, want_logp, want_entropy;
  head->Sample(logits.view({3, 4, 7 * 256}), false, &taken, &logp);
  head->Evaluate(logits.view({3, 4, 7 * 256}), taken, &logp, &entropy);
  TinyVLAPolicy::LogProbs(logits, taken, &want_logp, &want_entropy);
  EXPECT_TRUE(torch::allclose(logp, want_logp));
  EXPECT_TRUE(torch::allclose(entropy, want_entropy));
  EXPECT_TRUE(torch::allclose(head->ToControl(taken),
                              TinyVLAPolicy::TokensToActions(taken, 256)));
}

TEST(ActionHead, GaussianSamplesAreClippedToTheControllerOnly) {
  std::unique_ptr<ActionHead> head = Make(Gaussian(1, -0.5, 0.5));
  const at::Tensor taken = torch::tensor({-3.0f, 0.25f, 9.0f}).view({3, 1, 1});
  const at::Tensor a = head->ToActions(taken);
  EXPECT_FLOAT_EQ(a[0][0][0].item<float>(), -0.5f);
  EXPECT_FLOAT_EQ(a[2][0][0].item<float>(), 0.5f);
  const at::Tensor ctrl = head->ToControl(taken);
  EXPECT_FLOAT_EQ(ctrl[0][0][0].item<float>(), -1.0f);
  EXPECT_FLOAT_EQ(ctrl[1][0][0].item<float>(), 0.5f);
  EXPECT_FLOAT_EQ(ctrl[2][0][0].item<float>(), 1.0f);
}

TEST(ActionHead, FromControlIsToControlsInverse) {
  const at::Tensor ctrl = torch::linspace(-1, 1, 21).view({3, 1, 7});
  // Bins: the bin holding each value, whose centre is within half a bin.
  std::unique_ptr<ActionHead> bins =
      Make(Bins({256, 64, 5, 2, 512, 3, 7}, std::vector<double>(7, -1.0),
                {1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0}));
  const at::Tensor taken = bins->FromControl(ctrl);
  EXPECT_EQ(taken.scalar_type(), torch::kLong);
  const at::Tensor back = bins->ToControl(taken);
  const at::Tensor half = torch::tensor({1.0 / 256, 1.0 / 64, 1.0 / 5, 1.0 / 2,
                                         1.0 / 512, 1.0 / 3, 1.0 / 7})
                              .view({1, 1, 7});
  EXPECT_TRUE(((back - ctrl).abs() <= half + 1e-6).all().item<bool>());
  // A Gaussian over another range: exact.
  std::unique_ptr<ActionHead> g = Make(Gaussian(7, -0.5, 2.0));
  EXPECT_TRUE(
      torch::allclose(g->ToControl(g->FromControl(ctrl)), ctrl, 1e-5, 1e-6));
  EXPECT_NEAR(g->FromControl(ctrl)[0][0][0].item<double>(), -0.5, 1e-6);
}

TEST(ActionHead, ASpaceOutOfRangeIsRefusedNamingTheField) {
  absl::StatusOr<std::unique_ptr<ActionHead>> h =
      MakeActionHead(Bins({256, 1}, {-1, -1}, {1, 1}));
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.status().message(),
            "action head: action.bins[1]: 1 (at least 2)");
  h = MakeActionHead(Gaussian(3, 1, 1));
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.status().message().find("action.low/high[0]"), std::string::npos)
      << h.status();
}

}  // namespace
}  // namespace rlvla3
