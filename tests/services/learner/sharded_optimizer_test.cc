// ShardedOptimizer on its own, one process: the gradients are scaled before
// their norm is taken and clipped to max_grad_norm, a step moves the
// parameters that have gradients, each group at its own rate, and a saved
// optimizer loaded into a fresh one over the same weights takes the very
// same next step (the AdamW moments and the learner's state come back).
#include "services/learner/sharded_optimizer.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <memory>
#include <utility>
#include <vector>

#include "policies/tiny_vla_policy.h"
#include "tests/policies/small_tiny_vla.h"
#include "tests/test_dir.h"

namespace rlvla3 {
namespace {

std::shared_ptr<TinyVLAPolicy> Policy() {
  torch::manual_seed(5);
  return std::make_shared<TinyVLAPolicy>(TinyVLA(testutil::SmallTinyVLA()), 0);
}

// A loss over every parameter: each one's gradient is `k` times its sign.
at::Tensor Loss(TrainablePolicy& policy, double k) {
  TrainablePolicy::ParameterGroups g = policy.Parameters();
  at::Tensor loss = torch::zeros({});
  for (auto* group : {&g.weights, &g.value, &g.action_scale}) {
    for (const at::Tensor& p : *group)
      loss = loss + k * p.sign().detach().mul(p).sum();
  }
  return loss;
}

std::vector<at::Tensor> Copy(TrainablePolicy& policy) {
  std::vector<at::Tensor> out;
  for (const auto& [name, t] : policy.State()) out.push_back(t.clone());
  return out;
}

TEST(ShardedOptimizer, GradientsAreScaledThenClippedToTheMaxNorm) {
  auto policy = Policy();
  ShardedOptimizerOptions o;
  o.max_grad_norm = 1e9;  // no clipping: the norm as scaled
  ShardedOptimizer opt(*policy, o, /*reducer=*/nullptr);
  opt.Backward(Loss(*policy, 1.0), /*last_of_step=*/true);
  const double once = opt.ClipGradients(1.0).item<double>();
  opt.ZeroGradients();
  opt.Backward(Loss(*policy, 1.0), true);
  const double twice = opt.ClipGradients(2.0).item<double>();
  EXPECT_GT(once, 1.0);
  EXPECT_NEAR(twice, 2.0 * once, 1e-6 * once);

  ShardedOptimizerOptions clipped;
  clipped.max_grad_norm = 0.5;
  ShardedOptimizer small(*policy, clipped, nullptr);
  small.ZeroGradients();
  small.Backward(Loss(*policy, 1.0), true);
  EXPECT_NEAR(small.ClipGradients(1.0).item<double>(), once, 1e-6 * once);
  double sq = 0;
  for (const auto& p : policy->Parameters().weights) {
    if (p.grad().defined()) sq += p.grad().pow(2).sum().item<double>();
  }
  EXPECT_LE(std::sqrt(sq), 0.5 + 1e-4);
}

// A group at rate 0 never moves: its gradients take no share of the clipped
// norm (the log-temperatures at rl.action_scale_lr 0 used to shrink every
// other step).
TEST(ShardedOptimizer, AFrozenGroupIsLeftOutOfTheClippedNorm) {
  auto policy = Policy();
  {
    torch::NoGradGuard no_grad;  // non-zero, so that Loss reaches them
    for (at::Tensor& p : policy->Parameters().action_scale) p.fill_(0.3);
  }
  ShardedOptimizerOptions o;
  o.max_grad_norm = 1e9;
  ShardedOptimizer all(*policy, o, nullptr);
  all.Backward(Loss(*policy, 1.0), true);
  const double with = all.ClipGradients(1.0).item<double>();
  double sq = 0;  // the norm of the trained groups alone
  const TrainablePolicy::ParameterGroups g = policy->Parameters();
  for (const auto* group : {&g.weights, &g.value}) {
    for (const at::Tensor& p : *group) {
      if (p.grad().defined()) sq += p.grad().pow(2).sum().item<double>();
    }
  }
  ASSERT_FALSE(g.action_scale.empty());
  all.ZeroGradients();
  o.action_scale_lr = 0;
  ShardedOptimizer frozen(*policy, o, nullptr);
  frozen.Backward(Loss(*policy, 1.0), true);
  const double without = frozen.ClipGradients(1.0).item<double>();
  EXPECT_GT(with, without);
  EXPECT_NEAR(without, std::sqrt(sq), 1e-6 * without);
}

TEST(ShardedOptimizer, AStepMovesEveryGroupAtItsOwnRate) {
  auto policy = Policy();
  ShardedOptimizerOptions o;
  o.lr = 1e-3;
  o.value_lr = 1e-2;
  o.max_grad_norm = 1e9;
  ShardedOptimizer opt(*policy, o, nullptr);
  const TrainablePolicy::ParameterGroups g = policy->Parameters();
  const at::Tensor w = g.weights.front().clone(), v = g.value.front().clone();
  opt.Backward(Loss(*policy, 1.0), true);
  opt.ClipGradients(1.0);
  opt.Step();
  // Adam's first step moves each element by about its rate.
  const double dw = (g.weights.front() - w).abs().max().item<double>();
  const double dv = (g.value.front() - v).abs().max().item<double>();
  EXPECT_NEAR(dw, 1e-3, 2e-4);
  EXPECT_NEAR(dv, 1e-2, 2e-3);
  EXPECT_TRUE(opt.status().ok());
  EXPECT_TRUE(opt.AnyOnAnyRank(true));  // alone: its own answer
  EXPECT_FALSE(opt.AnyOnAnyRank(false));
}

TEST(ShardedOptimizer, ALoadedOptimizerTakesTheSameNextStep) {
  testutil::TestDir dir;
  auto a = Policy(), b = Policy();
  ShardedOptimizerOptions o;
  o.lr = 1e-2;
  ShardedOptimizer first(*a, o, nullptr);
  for (double k : {1.0, -0.5}) {  // moments that a fresh AdamW lacks
    first.Backward(Loss(*a, k), true);
    first.ClipGradients(1.0);
    first.Step();
    first.ZeroGradients();
  }
  ASSERT_TRUE(first.Save(dir.path(), {7, 2, 3e-3, "rng"}).ok());
  b->LoadState(a->State());
  ShardedOptimizer second(*b, o, nullptr);
  absl::StatusOr<LearnerTrainingState> s = second.Load(dir.path());
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->version, 7u);
  EXPECT_EQ(s->steps_taken, 2);
  EXPECT_DOUBLE_EQ(s->lr, 3e-3);
  EXPECT_EQ(s->rng, "rng");
  const std::vector<std::pair<ShardedOptimizer*, TrainablePolicy*>> both = {
      {&first, a.get()}, {&second, b.get()}};
  for (const auto& [opt, policy] : both) {
    opt->Backward(Loss(*policy, 0.25), true);
    opt->ClipGradients(1.0);
    opt->Step();
  }
  const std::vector<at::Tensor> pa = Copy(*a), pb = Copy(*b);
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i)
    EXPECT_TRUE(torch::equal(pa[i], pb[i]));
}

}  // namespace
}  // namespace rlvla3
