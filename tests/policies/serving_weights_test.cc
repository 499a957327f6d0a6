// ServingWeights: a bf16 copy made once, refreshed in place at each version,
// acting close to the float32 policy under autocast.
#include "policies/serving_weights.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "policies/device.h"
#include "policies/tiny_vla_policy.h"
#include "tests/policies/small_tiny_vla.h"

namespace rlvla3 {
namespace {

PolicyInput Input(int64_t B) {
  torch::manual_seed(11);
  PolicyInput in;
  in.images = torch::randint(0, 256, {B, 2, 32, 32, 3}, torch::kByte);
  in.proprio = torch::randn({B, 8});
  in.text = torch::randint(2, 16, {B, 5}, torch::kLong);
  in.text_len = torch::tensor({5, 2, 3, 5}, torch::kLong).narrow(0, 0, B);
  return in;
}

TEST(ServingWeights, ABf16CopyMadeOnceAndRefreshedInPlaceAtEachVersion) {
  torch::manual_seed(1);
  TinyVLAPolicy learner(TinyVLA(testutil::SmallTinyVLA()), 0);
  ServingWeights serving(at::kBFloat16);
  const std::shared_ptr<Policy> v1 = serving.Refresh(learner.Snapshot(1));
  auto copy = std::dynamic_pointer_cast<TinyVLAPolicy>(v1);
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ(copy->version(), 1u);
  const at::Tensor w = copy->net()->named_parameters()["blocks.0.qkv.weight"];
  EXPECT_EQ(w.scalar_type(), at::kBFloat16);
  const void* storage = w.data_ptr();
  // The learner steps; version 2 lands in the same tensors.
  {
    torch::NoGradGuard no_grad;
    for (at::Tensor& p : learner.net()->parameters()) p.add_(0.01);
  }
  const auto snapshot2 = learner.Snapshot(2);
  const std::shared_ptr<Policy> v2 = serving.Refresh(snapshot2);
  EXPECT_EQ(v2, v1);
  EXPECT_EQ(v2->version(), 2u);
  const at::Tensor w2 = copy->net()->named_parameters()["blocks.0.qkv.weight"];
  EXPECT_EQ(w2.data_ptr(), storage);
  const at::Tensor src = std::dynamic_pointer_cast<TinyVLAPolicy>(snapshot2)
                             ->net()
                             ->named_parameters()["blocks.0.qkv.weight"];
  EXPECT_TRUE(torch::equal(w2, src.to(at::kBFloat16)));
}

TEST(ServingWeights, Bf16ActsCloseToFloat32UnderAutocast) {
  torch::manual_seed(2);
  TinyVLAPolicy policy(TinyVLA(testutil::SmallTinyVLA()), 0);
  ServingWeights serving(at::kBFloat16);
  const std::shared_ptr<Policy> bf16 = serving.Refresh(policy.Snapshot(0));
  const PolicyInput in = Input(4);
  const ActResult fp32 = policy.Snapshot(0)->Act(in, /*greedy=*/true);
  ActResult half;
  {
    AutocastGuard autocast(at::kCPU, true);
    half = bf16->Act(in, /*greedy=*/true);
  }
  EXPECT_TRUE(
      torch::allclose(fp32.values, half.values.to(at::kFloat), 0.05, 0.05));
  // Greedy bins agree on most dimensions (bf16 rounds near-ties).
  const double agree =
      fp32.tokens.eq(half.tokens).to(at::kFloat).mean().item<double>();
  EXPECT_GT(agree, 0.8) << agree;
}

TEST(ServingWeights, APolicyThatCannotBeCastIsServedAsItIs) {
  // Not a TrainablePolicy: nothing to copy.
  struct Fixed : Policy {
    ActResult Act(const PolicyInput&, bool) override { return {}; }
    EvalResult Evaluate(const PolicyInput&, const at::Tensor&) override {
      return {};
    }
    int chunk() const override { return 1; }
    uint64_t version() const override { return 7; }
  };
  ServingWeights serving(at::kBFloat16);
  const auto fixed = std::make_shared<Fixed>();
  EXPECT_EQ(serving.Refresh(fixed), fixed);
  EXPECT_NE(serving.reason(), "");
}

}  // namespace
}  // namespace rlvla3
