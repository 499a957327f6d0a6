// RL sanity: a contextual bandit trained through the real LearnerCore and a
// small TinyVLA, acting through the learner's published snapshots as the
// inference server does. Two contexts (proprio sign); a decision succeeds when
// its first action token falls in the context's band of 13 of 256 bins (~5%
// at the start). PPO (GAE), GRPO and multi-epoch GRPO must each reach >= 90%
// sampled success within a fixed number of updates: a sign error, a broken
// ratio or a silent optimizer shows here in seconds, not after a long run.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "policies/tiny_vla_policy.h"
#include "services/learner/learner_core.h"
#include "tests/services/learner/small_learner.h"

namespace rlvla3 {
namespace {

using testutil::SmallNet;
using testutil::SmallShape;

constexpr int kGroup = 8;
constexpr int kEpisodesPerUpdate = 32;
constexpr int kBand = 13;  // bins of 256

class Bandit {
 public:
  explicit Bandit(LearnerOptions options) : options_(std::move(options)) {
    torch::manual_seed(0);
    text_ = torch::ones({1, 4}, torch::kLong);
    lens_ = torch::full({1}, 4, torch::kLong);
    learner_ = std::make_unique<LearnerCore>(
        std::make_shared<TinyVLAPolicy>(TinyVLA(SmallNet()), 0), text_, lens_,
        options_, 0);
    for (int i = 0; i < kEpisodesPerUpdate; ++i)
      segs_.push_back(std::make_unique<RolloutSegment>(SmallShape()));
  }

  // One batch of episodes acted by the current snapshot, then the update.
  // Returns the batch's sampled success rate.
  double Round() {
    std::vector<RolloutSegment*> batch;
    std::vector<int> slots(kEpisodesPerUpdate, 0);
    for (int i = 0; i < kEpisodesPerUpdate; ++i) {
      RolloutSegment* s = segs_[i].get();
      s->Clear();
      const int context = (i / kGroup) % 2;
      for (auto& p : s->proprio) p = context == 0 ? -1.0f : 1.0f;
      s->group = groups_ + static_cast<uint64_t>(i / kGroup);
      batch.push_back(s);
    }
    groups_ += kEpisodesPerUpdate / kGroup;
    std::shared_ptr<Policy> actor = learner_->MakeSnapshot();
    const PolicyInput in =
        GatherFromSegments(batch, slots, text_, lens_, nullptr);
    const ActResult act = actor->Act(in, /*greedy=*/false);
    const at::Tensor tokens = act.tokens.to(torch::kByte).contiguous();
    const at::Tensor lp = act.log_probs.contiguous();
    const at::Tensor values = act.values.contiguous();
    const int64_t ka = tokens.size(1) * tokens.size(2);
    int successes = 0;
    for (int i = 0; i < kEpisodesPerUpdate; ++i) {
      RolloutSegment* s = batch[i];
      std::memcpy(s->tokens_at(0), tokens.data_ptr<uint8_t>() + i * ka, ka);
      std::memcpy(s->log_probs_at(0), lp.data_ptr<float>() + i * lp.size(1),
                  sizeof(float) * lp.size(1));
      const int bin = tokens.data_ptr<uint8_t>()[i * ka];
      const bool context0 = (i / kGroup) % 2 == 0;
      const bool success = context0 ? bin < kBand : bin >= 256 - kBand;
      successes += success;
      s->values[0] = values.data_ptr<float>()[i];
      s->rewards[0] = success ? 1.0f : 0.0f;
      s->terminal[0] = 1;
      s->executed[0] = static_cast<uint8_t>(s->shape.chunk);
      s->versions[0] = act.version;
      s->n = 1;
      s->episode_end = true;
      s->success = success;
      s->episode_return = s->rewards[0];
    }
    learner_->Add(batch);
    while (learner_->CanTrain()) learner_->TrainMicroBatch();
    EXPECT_TRUE(learner_->ReadyToStep());
    const LearnerStepStats st = learner_->Step();
    EXPECT_FALSE(st.skipped);
    learner_->TakeConsumed();
    return static_cast<double>(successes) / kEpisodesPerUpdate;
  }

  // Rounds until the sampled success of two rounds in a row is >= 90%;
  // returns the rounds taken (max_rounds + 1 if never).
  int RoundsTo90(int max_rounds, double* first) {
    double last = 0;
    for (int r = 1; r <= max_rounds; ++r) {
      const double s = Round();
      if (r == 1) *first = s;
      if (s >= 0.9 && last >= 0.9) return r;
      last = s;
    }
    return max_rounds + 1;
  }

 private:
  LearnerOptions options_;
  at::Tensor text_, lens_;
  std::unique_ptr<LearnerCore> learner_;
  std::vector<std::unique_ptr<RolloutSegment>> segs_;
  uint64_t groups_ = 1;
};

LearnerOptions BanditOptions(const std::string& algorithm) {
  LearnerOptions o;
  o.algorithm = algorithm;
  o.grpo_group_size = kGroup;
  o.global_units = kEpisodesPerUpdate;  // episodes (GRPO) = samples (PPO)
  o.micro_batch = kEpisodesPerUpdate;
  o.max_policy_lag = 0;
  o.lr = 1e-2;
  o.value_lr = 1e-2;
  o.action_scale_lr = 0;
  // Every step's gradient clipped to this norm: the step's direction at a
  // steady size. At 1 (unclipped here) one large early gradient fills
  // AdamW's second moment and starves the later steps: multi-epoch GRPO
  // took > 150 rounds, against 34-47 at 0.01-0.1 (docs/experiments.md).
  o.max_grad_norm = 0.1;
  return o;
}

constexpr int kMaxRounds = 150;

// Starts near 5% sampled success and reaches >= 90% within kMaxRounds.
void ExpectLearns(const LearnerOptions& o, int epochs, int minibatches) {
  LearnerOptions with = o;
  with.ppo_epochs = epochs;
  with.minibatches = minibatches;
  double first = 0;
  const int rounds = Bandit(with).RoundsTo90(kMaxRounds, &first);
  std::printf(
      "bandit %s %d x %d: %.0f%% at the first round, >= 90%% after %d "
      "rounds (limit %d)\n",
      with.algorithm.c_str(), epochs, minibatches, 100 * first, rounds,
      kMaxRounds);
  EXPECT_LT(first, 0.25);
  EXPECT_LE(rounds, kMaxRounds) << with.algorithm << " " << epochs << " x "
                                << minibatches << " never reached 90%";
}

TEST(RlSanity, GrpoLearnsTheBandit) {
  ExpectLearns(BanditOptions("grpo"), 1, 1);
}

TEST(RlSanity, MultiEpochGrpoLearnsTheBandit) {
  ExpectLearns(BanditOptions("grpo"), 4, 2);
}

TEST(RlSanity, PpoLearnsTheBandit) { ExpectLearns(BanditOptions("ppo"), 4, 2); }

}  // namespace
}  // namespace rlvla3
