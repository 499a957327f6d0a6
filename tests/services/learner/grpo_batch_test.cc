// LearnerCore's GRPO global batch: groups whose episodes all got the same
// return carry no signal and must not move anything (not the weights, not
// AdamW's moments, not the adaptive learning rate), and dynamic sampling
// averages the update over the informative groups only.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <vector>

#include "policies/tiny_vla_policy.h"
#include "services/learner/learner_core.h"
#include "tests/services/learner/learner_fixture.h"
#include "tests/services/learner/small_learner.h"

namespace rlvla3 {
namespace {

using testutil::LearnerTest;
using testutil::SmallNet;

class GrpoBatchTest : public LearnerTest {
 protected:
  void SetUp() override {
    LearnerTest::SetUp();
    options_.algorithm = "grpo";
    options_.grpo_group_size = 2;
    options_.global_units = 2;  // one group per update
    options_.max_policy_lag = 100;
    options_.target_kl = 0.01;  // the rate adapts after every update
  }
  // Segments i and i + 1 as one group; returns `r0`, `r1`.
  std::vector<RolloutSegment*> Group(int i, uint64_t group, uint64_t version,
                                     float r0, float r1) {
    RolloutSegment* a = Episode(i, version, group);
    RolloutSegment* b = Episode(i + 1, version, group);
    a->episode_return = r0;
    b->episode_return = r1;
    return {a, b};
  }
  static LearnerStepStats Update(LearnerCore& l,
                                 const std::vector<RolloutSegment*>& segs) {
    l.Add(segs);
    while (l.CanTrain()) l.TrainMicroBatch();
    EXPECT_TRUE(l.ReadyToStep());
    LearnerStepStats st = l.Step();
    l.TakeConsumed();
    return st;
  }
  // Trains an informative group, optionally `uniform` groups (all returns
  // equal), then another informative group; returns the final weights and
  // the learning rate after each update.
  std::vector<at::Tensor> Run(int uniform, std::vector<double>* lrs) {
    torch::manual_seed(0);
    LearnerCore l(Wrap(TinyVLA(SmallNet())), text_, lens_, options_, 0);
    lrs->push_back(Update(l, Group(0, 1, l.version(), 1, 0)).lr);
    for (int u = 0; u < uniform; ++u) {
      const std::vector<at::Tensor> before = Weights(l);
      const float r = static_cast<float>(u % 2);
      const LearnerStepStats st =
          Update(l, Group(0, 10 + u, l.version(), r, r));
      EXPECT_EQ(st.optimizer_steps, 0);
      EXPECT_EQ(st.groups, 1);
      EXPECT_EQ(st.informative_groups, 0);
      EXPECT_EQ(st.samples, 0);
      EXPECT_EQ(st.lr, lrs->back()) << "a silent update adapted the rate";
      EXPECT_TRUE(Same(before, Weights(l))) << "a uniform group moved weights";
    }
    lrs->push_back(Update(l, Group(2, 2, l.version(), 0, 1)).lr);
    return Weights(l);
  }
};

TEST_F(GrpoBatchTest, AllEqualGroupLeavesWeightsAndOptimizerStateUnchanged) {
  for (int epochs : {1, 2}) {
    options_.ppo_epochs = epochs;
    std::vector<double> lr_plain, lr_uniform;
    const std::vector<at::Tensor> plain = Run(0, &lr_plain);
    const std::vector<at::Tensor> with_uniform = Run(2, &lr_uniform);
    // AdamW's moments and the rate are as if the silent groups never came:
    // the next informative update lands on the same weights.
    EXPECT_TRUE(Same(plain, with_uniform)) << "ppo_epochs " << epochs;
    EXPECT_EQ(lr_plain, lr_uniform);
  }
}

TEST_F(GrpoBatchTest, DynamicSamplingAveragesOverTheInformativeGroups) {
  // One informative group and one uniform group in a batch of two groups:
  // with dynamic sampling the gradient is that of the informative group
  // alone; without, it is diluted by half.
  options_.target_kl = 0;
  options_.max_grad_norm = 0;  // the norm as computed
  auto norm = [&](int64_t units, bool dynamic, bool with_uniform) {
    torch::manual_seed(0);
    options_.global_units = units;
    options_.dynamic_sampling = dynamic;
    LearnerCore l(Wrap(TinyVLA(SmallNet())), text_, lens_, options_, 0);
    std::vector<RolloutSegment*> segs = Group(0, 1, 0, 1, 0);
    if (with_uniform) {
      for (RolloutSegment* s : Group(2, 2, 0, 1, 1)) segs.push_back(s);
    }
    const LearnerStepStats st = Update(l, segs);
    EXPECT_EQ(st.groups, with_uniform ? 2 : 1);
    EXPECT_EQ(st.informative_groups, 1);
    return st.grad_norm;
  };
  const double alone = norm(2, true, false);
  ASSERT_GT(alone, 0);
  EXPECT_NEAR(norm(4, true, true), alone, 1e-5 * alone);
  EXPECT_NEAR(norm(4, false, true), 0.5 * alone, 1e-5 * alone);
}

// Refill: a batch with fewer informative groups than asked is not trained;
// the version advances with the weights as they were, and its informative
// group joins the next batch's: the update then is the one a batch holding
// both informative groups would have taken, and the uniform groups'
// segments go back at once.
TEST_F(GrpoBatchTest, ASparseBatchIsCarriedIntoTheNextOne) {
  options_.target_kl = 0;
  options_.ppo_epochs = 2;
  options_.global_units = 4;  // two groups per batch
  while (segs_.size() < 8)
    segs_.push_back(std::make_unique<RolloutSegment>(testutil::SmallShape()));
  auto both = [&](LearnerCore& l) {  // informative groups 1 and 3, together
    std::vector<RolloutSegment*> s = Group(0, 1, 0, 1, 0);
    for (RolloutSegment* x : Group(2, 3, 0, 0, 1)) s.push_back(x);
    return Update(l, s);
  };
  torch::manual_seed(0);
  LearnerCore direct(Wrap(TinyVLA(SmallNet())), text_, lens_, options_, 0);
  const LearnerStepStats want = both(direct);
  ASSERT_EQ(want.informative_groups, 2);

  options_.min_informative_groups = 2;
  torch::manual_seed(0);
  LearnerCore l(Wrap(TinyVLA(SmallNet())), text_, lens_, options_, 0);
  const std::vector<at::Tensor> start = Weights(l);
  std::vector<RolloutSegment*> first = Group(0, 1, 0, 1, 0);
  for (RolloutSegment* x : Group(4, 2, 0, 1, 1)) first.push_back(x);
  l.Add(first);
  while (l.CanTrain()) l.TrainMicroBatch();
  ASSERT_TRUE(l.ReadyToStep());
  const LearnerStepStats carried = l.Step();
  EXPECT_TRUE(carried.deferred);
  EXPECT_EQ(carried.optimizer_steps, 0);
  EXPECT_EQ(carried.version, 1u);
  EXPECT_TRUE(Same(start, Weights(l)));
  EXPECT_EQ(l.TakeConsumed().size(), 2u);  // the uniform group's only
  std::vector<RolloutSegment*> second = Group(2, 3, 0, 0, 1);
  for (RolloutSegment* x : Group(6, 4, 0, 0, 0)) second.push_back(x);
  const LearnerStepStats trained = Update(l, second);
  EXPECT_FALSE(trained.deferred);
  EXPECT_EQ(trained.optimizer_steps, want.optimizer_steps);
  EXPECT_EQ(trained.version, 2u);
  EXPECT_TRUE(Same(Weights(direct), Weights(l)))
      << "the carried group was not trained as in one batch";

  // Never enough: carried refill_max_rounds times, then trained.
  options_.min_informative_groups = 3;
  options_.refill_max_rounds = 1;
  LearnerCore capped(Wrap(TinyVLA(SmallNet())), text_, lens_, options_, 0);
  std::vector<RolloutSegment*> sparse = Group(0, 1, 0, 1, 0);
  for (RolloutSegment* x : Group(2, 2, 0, 1, 1)) sparse.push_back(x);
  EXPECT_TRUE(Update(capped, sparse).deferred);
  std::vector<RolloutSegment*> silent = Group(4, 3, 1, 0, 0);
  for (RolloutSegment* x : Group(6, 4, 1, 1, 1)) silent.push_back(x);
  const LearnerStepStats last = Update(capped, silent);
  EXPECT_FALSE(last.deferred);
  EXPECT_GT(last.optimizer_steps, 0);
  EXPECT_EQ(last.informative_groups, 0);  // of this batch; 1 carried
}

}  // namespace
}  // namespace rlvla3
