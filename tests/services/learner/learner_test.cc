#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>

#include "policies/device.h"
#include "policies/tiny_vla_policy.h"
#include "services/learner/learner_core.h"
#include "tests/services/learner/learner_fixture.h"
#include "tests/services/learner/small_learner.h"

namespace rlvla3 {
namespace {

using testutil::Fill;
using testutil::LearnerTest;
using testutil::SmallNet;

TEST_F(LearnerTest, OneOptimizerStepPerGlobalBatchWithCarryOver) {
  LearnerCore l(Wrap(TinyVLA(SmallNet())), text_, lens_, options_,
                /*version=*/5);
  for (int i = 0; i < 3; ++i) Fill(segs_[i].get(), 4, 5, i);
  l.Add({segs_[0].get(), segs_[1].get(), segs_[2].get()});  // 12 samples
  const auto before = Weights(l);
  int micro = 0;
  while (l.CanTrain()) {
    l.TrainMicroBatch();
    ++micro;
  }
  EXPECT_EQ(micro, 2);  // 8 samples = one global batch; 4 carry over
  ASSERT_TRUE(l.ReadyToStep());
  LearnerStepStats st = l.Step();
  EXPECT_FALSE(st.skipped);
  EXPECT_EQ(st.samples, 8);
  EXPECT_EQ(st.version, 6u);
  EXPECT_EQ(st.lag_max, 0.0);
  EXPECT_FALSE(Same(before, Weights(l)));
  EXPECT_EQ(l.ready_samples(), 4);
  EXPECT_EQ(l.TakeConsumed().size(), 2u);
}

TEST_F(LearnerTest, ActionLogScaleLearnsAtItsOwnRate) {
  options_.lr = 1e-9;
  options_.action_scale_lr = 0.05;
  TinyVLA net(SmallNet());
  {
    // Non-zero logits, as after SFT (at init they are ~0 and scaling them
    // changes nothing).
    torch::NoGradGuard no_grad;
    for (const auto& p : net->named_parameters()) {
      if (p.key().rfind("action_head.", 0) == 0) p.value().normal_(0, 0.5);
    }
  }
  LearnerCore l(Wrap(net), text_, lens_, options_, /*version=*/0);
  at::Tensor scale, stem;
  for (const auto& p : NetOf(l)->named_parameters()) {
    if (p.key() == "action_log_scale") scale = p.value();
    if (p.key() == "stem_agentview_1.weight") stem = p.value();
  }
  ASSERT_TRUE(scale.defined() && stem.defined());
  const at::Tensor scale0 = scale.detach().clone(),
                   stem0 = stem.detach().clone();
  Fill(segs_[0].get(), 4, 0, 0);
  Fill(segs_[1].get(), 4, 0, 1);
  l.Add({segs_[0].get(), segs_[1].get()});
  while (l.CanTrain()) l.TrainMicroBatch();
  ASSERT_FALSE(l.Step().skipped);
  // Adam's first step moves each parameter by about its group's lr.
  const double moved = (scale - scale0).abs().max().item<double>();
  EXPECT_GT(moved, 0.01);
  EXPECT_LT(moved, 0.06);
  EXPECT_LT((stem - stem0).abs().max().item<double>(), 1e-8);
}

// One global batch on `l` from segments a and b (filled with `seed` and
// seed + 1 at behaviour version `version`).
LearnerStepStats TrainOneStep(LearnerCore& l, RolloutSegment* a,
                              RolloutSegment* b, uint64_t version,
                              uint32_t seed) {
  Fill(a, 4, version, seed);
  Fill(b, 4, version, seed + 1);
  l.Add({a, b});
  while (l.CanTrain()) l.TrainMicroBatch();
  EXPECT_TRUE(l.ReadyToStep());
  LearnerStepStats st = l.Step();
  l.TakeConsumed();
  return st;
}

TEST_F(LearnerTest, AdaptiveLearningRateFollowsTheStepKl) {
  // Off: the rate stays, no KL is measured.
  {
    LearnerCore l(Wrap(TinyVLA(SmallNet())), text_, lens_, options_, 0);
    LearnerStepStats st = TrainOneStep(l, segs_[0].get(), segs_[1].get(), 0, 0);
    EXPECT_DOUBLE_EQ(st.lr, options_.lr);
    EXPECT_EQ(st.step_kl, 0.0);
  }
  // A step far over its KL target cuts the rate, and the cut rate is the one
  // the optimizer uses: the next step barely moves the weights.
  {
    LearnerOptions o = options_;
    o.target_kl = 1e-12;
    o.lr_adapt_factor = 1e6;
    o.lr_min = 1e-12;
    LearnerCore l(Wrap(TinyVLA(SmallNet())), text_, lens_, o, 0);
    LearnerStepStats st = TrainOneStep(l, segs_[0].get(), segs_[1].get(), 0, 0);
    EXPECT_GT(st.step_kl, 2e-12);
    EXPECT_NEAR(st.lr, 1e-8, 1e-12);
    const std::vector<at::Tensor> before = Weights(l);
    st = TrainOneStep(l, segs_[2].get(), segs_[3].get(), 1, 2);
    ASSERT_FALSE(st.skipped);
    const std::vector<at::Tensor> after = Weights(l);
    double moved = 0;
    for (size_t i = 0; i < before.size(); ++i) {
      moved =
          std::max(moved, (after[i] - before[i]).abs().max().item<double>());
    }
    // The value head keeps its own rate (value_lr): measure the rest.
    double policy_moved = 0;
    size_t i = 0;
    for (const auto& p : NetOf(l)->named_parameters()) {
      if (p.key().rfind("value_head.", 0) != 0 && p.key() != "action_log_scale")
        policy_moved = std::max(
            policy_moved, (after[i] - before[i]).abs().max().item<double>());
      ++i;
    }
    EXPECT_GT(moved, 0.0);
    EXPECT_LT(policy_moved, 1e-6);
  }
  // A step far under its target raises the rate, up to lr_max.
  {
    LearnerOptions o = options_;
    o.target_kl = 1e3;
    o.lr_max = 1.2e-2;
    LearnerCore l(Wrap(TinyVLA(SmallNet())), text_, lens_, o, 0);
    LearnerStepStats st = TrainOneStep(l, segs_[0].get(), segs_[1].get(), 0, 0);
    EXPECT_GT(st.step_kl, 0.0);
    EXPECT_DOUBLE_EQ(st.lr, 1.2e-2);
  }
}

TEST_F(LearnerTest, SamplesOverTheLagBoundAreDropped) {
  LearnerCore l(Wrap(TinyVLA(SmallNet())), text_, lens_, options_,
                /*version=*/10);
  Fill(segs_[0].get(), 4, /*version=*/9, 0);  // lag 1: kept
  Fill(segs_[1].get(), 4, /*version=*/8, 1);  // lag 2 > 1: dropped
  segs_[2]->Clear();
  Fill(segs_[2].get(), 3, 10, 2);
  segs_[2]->versions[0] = 7;  // one stale decision taints the segment
  l.Add({segs_[0].get(), segs_[1].get(), segs_[2].get()});
  EXPECT_EQ(l.dropped_samples(), 7);
  EXPECT_EQ(l.ready_samples(), 4);
  const std::vector<RolloutSegment*> back = l.TakeConsumed();
  EXPECT_EQ(back.size(), 2u);  // the dropped ones go back to the pool at once
}

TEST_F(LearnerTest, NanLossSkipsTheStepAndLeavesWeightsUntouched) {
  LearnerCore l(Wrap(TinyVLA(SmallNet())), text_, lens_, options_,
                /*version=*/0);
  Fill(segs_[0].get(), 4, 0, 0);
  Fill(segs_[1].get(), 4, 0, 1);
  l.Add({segs_[0].get(), segs_[1].get()});
  const auto before = Weights(l);
  l.set_loss_scale_for_test(std::numeric_limits<double>::quiet_NaN());
  while (l.CanTrain()) l.TrainMicroBatch();
  LearnerStepStats st = l.Step();
  EXPECT_TRUE(st.skipped);
  EXPECT_EQ(st.version, 0u);
  EXPECT_EQ(l.skipped_steps(), 1);
  EXPECT_TRUE(Same(before, Weights(l)));
  // Gradients were cleared: the next clean batch trains normally.
  l.set_loss_scale_for_test(1.0);
  Fill(segs_[2].get(), 4, 0, 2);
  Fill(segs_[3].get(), 4, 0, 3);
  l.Add({segs_[2].get(), segs_[3].get()});
  while (l.CanTrain()) l.TrainMicroBatch();
  LearnerStepStats ok = l.Step();
  EXPECT_FALSE(ok.skipped);
  EXPECT_EQ(ok.version, 1u);
  for (const auto& p : NetOf(l)->parameters()) {
    EXPECT_TRUE(torch::isfinite(p).all().item<bool>());
  }
  EXPECT_FALSE(Same(before, Weights(l)));
}

// PPO epochs on a fixed batch: the first pass trains against the weights the
// proximal log-probs came from (ratio 1, nothing clipped); after its step the
// ratio moves, so a large learning rate makes later epochs clip.
TEST_F(LearnerTest, PpoEpochsClipOnlyAfterTheFirstEpoch) {
  options_.ppo_epochs = 3;
  options_.minibatches = 1;
  options_.lr = 0.1;
  options_.normalize_advantages = false;
  LearnerCore l(Wrap(TinyVLA(SmallNet())), text_, lens_, options_,
                /*version=*/0);
  Fill(segs_[0].get(), 4, 0, 0);
  Fill(segs_[1].get(), 4, 0, 1);
  l.Add({segs_[0].get(), segs_[1].get()});
  const auto before = Weights(l);
  while (l.CanTrain()) l.TrainMicroBatch();
  EXPECT_TRUE(l.TakeConsumed().empty());  // held until the update is done
  ASSERT_TRUE(l.ReadyToStep());
  LearnerStepStats st = l.Step();
  EXPECT_FALSE(st.skipped);
  EXPECT_EQ(st.samples, 8);
  EXPECT_EQ(st.optimizer_steps, 3);
  EXPECT_EQ(st.version, 1u);  // once per global batch, not per minibatch
  ASSERT_EQ(st.epoch_clip_fraction.size(), 3u);
  EXPECT_EQ(st.epoch_clip_fraction[0], 0.0);
  EXPECT_NEAR(st.epoch_approx_kl[0], 0.0, 1e-6);
  EXPECT_GT(std::max(st.epoch_clip_fraction[1], st.epoch_clip_fraction[2]),
            0.0);
  EXPECT_GT(st.epoch_approx_kl[2], 0.0);
  EXPECT_TRUE(st.ratio_max > 1.0 || st.ratio_min < 1.0);
  EXPECT_FALSE(Same(before, Weights(l)));
  EXPECT_EQ(l.TakeConsumed().size(), 2u);
}

// Minibatches: the clip can act from the second minibatch of the first epoch
// on, one optimizer step per minibatch.
TEST_F(LearnerTest, MinibatchesTakeOneStepEach) {
  options_.ppo_epochs = 2;
  options_.minibatches = 2;
  options_.micro_batch = 2;
  LearnerCore l(Wrap(TinyVLA(SmallNet())), text_, lens_, options_,
                /*version=*/3);
  Fill(segs_[0].get(), 4, 3, 0);
  Fill(segs_[1].get(), 4, 3, 1);
  l.Add({segs_[0].get(), segs_[1].get()});
  while (l.CanTrain()) l.TrainMicroBatch();
  LearnerStepStats st = l.Step();
  EXPECT_EQ(st.optimizer_steps, 4);
  EXPECT_EQ(st.version, 4u);
  EXPECT_EQ(st.epoch_clip_fraction.size(), 2u);
}

// Sync mode hands the learner the whole rollout at once; async streams it in
// and trains micro-batches as they arrive. For the same batch, seed and start
// weights the update must be the same.
TEST_F(LearnerTest, StreamedAndWholeBatchUpdatesAreIdentical) {
  options_.ppo_epochs = 2;
  options_.minibatches = 2;
  options_.shuffle_seed = 11;
  options_.lr = 1e-2;
  torch::manual_seed(3);
  TinyVLA a_net(SmallNet());
  TinyVLA b_net(std::dynamic_pointer_cast<TinyVLAImpl>(a_net->clone()));
  LearnerCore whole(Wrap(a_net), text_, lens_, options_, 0);
  LearnerCore streamed(Wrap(b_net), text_, lens_, options_, 0);
  const auto initial = Weights(whole);
  ASSERT_TRUE(Same(initial, Weights(streamed)));
  // No bootstrap values: those come from one forward pass over whatever
  // arrived together, and float differences between batch shapes would reach
  // the zero-gradient parameters (a key bias) through Adam's normalisation.
  for (int i = 0; i < 4; ++i) {
    Fill(segs_[i].get(), 4, 0, 100 + i % 2);
    segs_[i]->has_bootstrap = false;
  }
  // Sync: everything first, then train.
  whole.Add({segs_[0].get(), segs_[1].get()});
  while (whole.CanTrain()) whole.TrainMicroBatch();
  const LearnerStepStats a = whole.Step();
  // Async: one segment at a time, training whenever a micro-batch is ready.
  for (RolloutSegment* s : {segs_[2].get(), segs_[3].get()}) {
    streamed.Add({s});
    while (streamed.ShouldTrain()) streamed.TrainMicroBatch();
  }
  ASSERT_TRUE(streamed.ReadyToStep());
  const LearnerStepStats b = streamed.Step();
  EXPECT_EQ(a.optimizer_steps, b.optimizer_steps);
  EXPECT_EQ(a.version, b.version);
  const auto wa = Weights(whole), wb = Weights(streamed);
  ASSERT_EQ(wa.size(), wb.size());
  for (size_t i = 0; i < wa.size(); ++i)
    EXPECT_TRUE(torch::allclose(wa[i], wb[i], /*rtol=*/1e-5, /*atol=*/1e-6))
        << "parameter " << i << " " << NetOf(whole)->named_parameters()[i].key()
        << " max diff " << (wa[i] - wb[i]).abs().max().item<float>()
        << " moved " << (wa[i] - initial[i]).abs().max().item<float>();
  EXPECT_FALSE(Same(wa, initial));  // and it did train
}

TEST_F(LearnerTest, GrpoWaitsForTheWholeGroup) {
  options_.algorithm = "grpo";
  options_.grpo_group_size = 2;
  options_.global_units = 2;  // episodes
  LearnerCore l(Wrap(TinyVLA(SmallNet())), text_, lens_, options_, 0);
  Fill(segs_[0].get(), 3, 0, 0);
  segs_[0]->group = 7;
  segs_[0]->episode_end = true;
  segs_[0]->episode_return = 1;
  l.Add({segs_[0].get()});
  EXPECT_EQ(l.ready_samples(), 0);
  EXPECT_EQ(l.waiting_episodes(), 1);
  Fill(segs_[1].get(), 2, 0, 1);
  segs_[1]->group = 7;
  segs_[1]->episode_end = true;
  segs_[1]->episode_return = 0;
  l.Add({segs_[1].get()});
  EXPECT_EQ(l.ready_samples(), 5);
  EXPECT_NEAR(l.AdvantageOf(segs_[0].get(), 0), 1.0f, 1e-5);
  EXPECT_NEAR(l.AdvantageOf(segs_[1].get(), 1), -1.0f, 1e-5);
  while (l.CanTrain()) l.TrainMicroBatch();
  ASSERT_TRUE(l.ReadyToStep());
  EXPECT_EQ(l.Step().samples, 5);
}

TEST_F(LearnerTest, GrpoGroupLosingAMemberToTheLagBoundIsDroppedWhole) {
  options_.algorithm = "grpo";
  options_.grpo_group_size = 3;
  options_.global_units = 3;
  LearnerCore l(Wrap(TinyVLA(SmallNet())), text_, lens_, options_,
                /*version=*/5);
  l.Add({Episode(0, 5, 7)});
  EXPECT_EQ(l.waiting_episodes(), 1);
  l.Add({Episode(1, 3, 7)});  // lag 2 > 1: the group has no baseline now
  EXPECT_EQ(l.waiting_episodes(), 0);
  EXPECT_EQ(l.dropped_samples(), 4);
  EXPECT_EQ(l.TakeConsumed().size(), 2u);
  l.Add({Episode(2, 5, 7)});  // the group's last, fresh episode goes too
  EXPECT_EQ(l.dropped_samples(), 6);
  EXPECT_EQ(l.ready_samples(), 0);
  EXPECT_EQ(l.waiting_episodes(), 0);
  EXPECT_EQ(l.TakeConsumed().size(), 1u);
  l.Add({Episode(3, 5, 8)});  // other groups are unaffected
  EXPECT_EQ(l.waiting_episodes(), 1);
  EXPECT_EQ(l.dropped_samples(), 6);
}

// A member that never comes (its rollout worker died) must not hold the rest
// of its group, and their pool segments, forever.
TEST_F(LearnerTest, GrpoGroupMissingAMemberExpiresPastTheLagBound) {
  options_.algorithm = "grpo";
  options_.grpo_group_size = 2;
  options_.global_units = 2;
  options_.max_policy_lag = 1;
  LearnerCore l(Wrap(TinyVLA(SmallNet())), text_, lens_, options_, 0);
  l.Add({Episode(0, 0, 7)});  // its partner never comes
  for (uint64_t v = 0; v < 2; ++v) {
    l.Add({Episode(1, v, 10 + v), Episode(2, v, 10 + v)});
    while (l.CanTrain()) l.TrainMicroBatch();
    ASSERT_TRUE(l.ReadyToStep());
    l.Step();
    l.TakeConsumed();
    EXPECT_EQ(l.waiting_episodes(), v == 0 ? 1 : 0) << "version " << v + 1;
  }
  EXPECT_EQ(l.expired_episodes(), 1);
  EXPECT_EQ(l.dropped_samples(), 2);
  EXPECT_EQ(l.aged_out_samples(), 2);  // it waited past the bound
  l.Add({Episode(3, 2, 7)});           // the partner, late: dropped as it comes
  EXPECT_EQ(l.waiting_episodes(), 0);
  EXPECT_EQ(l.dropped_samples(), 4);
  EXPECT_EQ(l.aged_out_samples(), 2);  // it never waited
}

// The sign of the whole update path: after one step, the actions of the
// successful episode are more likely and those of the failed one less.
TEST_F(LearnerTest, Bf16AutocastTrainsFp32WeightsCloseToAnFp32Step) {
  // The same batch from the same weights, once per precision.
  auto step = [&](bool bf16, std::vector<at::Tensor>* weights) {
    torch::manual_seed(0);
    LearnerOptions o = options_;
    o.bf16 = bf16;
    LearnerCore l(Wrap(TinyVLA(SmallNet())), text_, lens_, o, 0);
    for (int i = 0; i < 2; ++i) Fill(segs_[i].get(), 4, 0, i);
    l.Add({segs_[0].get(), segs_[1].get()});
    while (l.CanTrain()) l.TrainMicroBatch();
    EXPECT_TRUE(l.ReadyToStep());
    const LearnerStepStats st = l.Step();
    EXPECT_FALSE(st.skipped);
    *weights = Weights(l);
    return st;
  };
  std::vector<at::Tensor> w32, w16;
  const LearnerStepStats fp32 = step(false, &w32);
  const LearnerStepStats bf16 = step(true, &w16);
  // The forward really ran in bf16: the loss moved, a little.
  EXPECT_NE(fp32.loss, bf16.loss);
  EXPECT_NEAR(fp32.loss, bf16.loss, 0.05 * std::abs(fp32.loss) + 1e-3);
  EXPECT_NEAR(fp32.grad_norm, bf16.grad_norm, 0.1 * fp32.grad_norm + 1e-3);
  for (const at::Tensor& w : w16) EXPECT_EQ(w.scalar_type(), at::kFloat);
}

TEST_F(LearnerTest, OnAGpuTheCoreTrainsThereAndPublishesWhereAsked) {
  if (CudaDeviceCount() == 0)
    GTEST_SKIP() << "no CUDA device visible to LibTorch here";
  options_.device = at::Device(at::kCUDA, 0);
  options_.publish_device = at::kCPU;
  torch::manual_seed(0);
  LearnerCore gpu(Wrap(TinyVLA(SmallNet())), text_, lens_, options_, 0);
  EXPECT_TRUE(NetOf(gpu)->parameters().front().is_cuda());
  for (int i = 0; i < 2; ++i) Fill(segs_[i].get(), 4, 0, i);
  gpu.Add({segs_[0].get(), segs_[1].get()});
  while (gpu.CanTrain()) gpu.TrainMicroBatch();
  ASSERT_TRUE(gpu.ReadyToStep());
  const LearnerStepStats st = gpu.Step();
  EXPECT_FALSE(st.skipped);
  EXPECT_TRUE(std::isfinite(st.loss));
  const auto snapshot =
      std::dynamic_pointer_cast<TrainablePolicy>(gpu.MakeSnapshot());
  EXPECT_EQ(snapshot->device(), at::Device(at::kCPU));
}

TEST_F(LearnerTest, OnAGpuGrpoStepsWithItsStatisticsOnTheDevice) {
  if (CudaDeviceCount() == 0)
    GTEST_SKIP() << "no CUDA device visible to LibTorch here";
  // GRPO has no value loss: its zero must live where the other statistics
  // do, or stacking them for the step's one host read fails.
  options_.device = at::Device(at::kCUDA, 0);
  options_.algorithm = "grpo";
  options_.grpo_group_size = 2;
  options_.global_units = 2;
  LearnerCore gpu(Wrap(TinyVLA(SmallNet())), text_, lens_, options_, 0);
  for (int i = 0; i < 2; ++i) {
    Fill(segs_[i].get(), 3, 0, i);
    segs_[i]->group = 1;
    segs_[i]->episode_end = true;
    segs_[i]->episode_return = i == 0 ? 1.0f : 0.0f;
  }
  gpu.Add({segs_[0].get(), segs_[1].get()});
  while (gpu.CanTrain()) gpu.TrainMicroBatch();
  ASSERT_TRUE(gpu.ReadyToStep());
  const LearnerStepStats st = gpu.Step();
  EXPECT_FALSE(st.skipped);
  EXPECT_TRUE(std::isfinite(st.loss));
  EXPECT_EQ(st.value_loss, 0.0);
}

TEST_F(LearnerTest, StepMakesPositiveAdvantageActionsMoreLikely) {
  options_.algorithm = "grpo";
  options_.grpo_group_size = 2;
  options_.global_units = 2;
  options_.lr = 1e-3;
  LearnerCore l(Wrap(TinyVLA(SmallNet())), text_, lens_, options_, 0);
  for (int i = 0; i < 2; ++i) {
    Fill(segs_[i].get(), 3, 0, i);
    segs_[i]->group = 1;
    segs_[i]->episode_end = true;
    segs_[i]->episode_return = i == 0 ? 1.0f : 0.0f;
  }
  // Per chunk step log-probs [3, K] of segment i's taken actions.
  auto log_probs = [&](int i) {
    torch::NoGradGuard no_grad;
    RolloutSegment* s = segs_[i].get();
    std::vector<RolloutSegment*> segs(3, s);
    std::vector<int> slots = {0, 1, 2};
    at::Tensor tokens;
    PolicyInput in = GatherFromSegments(segs, slots, text_, lens_, &tokens);
    TinyVLAPolicy policy(NetOf(l), /*version=*/0);
    return policy.Evaluate(in, tokens).log_probs.contiguous();
  };
  auto log_prob = [&](int i) { return log_probs(i).sum().item<double>(); };
  // Behaviour log-probs are the current policy's: IS weights of one.
  for (int i = 0; i < 2; ++i) {
    const at::Tensor lp = log_probs(i);
    std::memcpy(segs_[i]->log_probs.data(), lp.data_ptr<float>(),
                sizeof(float) * lp.numel());
  }
  const double good0 = log_prob(0), bad0 = log_prob(1);
  l.Add({segs_[0].get(), segs_[1].get()});
  while (l.CanTrain()) l.TrainMicroBatch();
  ASSERT_TRUE(l.ReadyToStep());
  ASSERT_FALSE(l.Step().skipped);
  EXPECT_GT(log_prob(0), good0);
  EXPECT_LT(log_prob(1), bad0);
}

}  // namespace
}  // namespace rlvla3
