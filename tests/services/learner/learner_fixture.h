// The LearnerCore tests' fixture (learner_test): a small TinyVLA learner's
// options, four reusable segments, and helpers to fill them with synthetic
// decisions (Fill, Episode) and to compare the network's weights.
#ifndef RLVLA3_TESTS_SERVICES_ROLES_LEARNER_FIXTURE_H_
#define RLVLA3_TESTS_SERVICES_ROLES_LEARNER_FIXTURE_H_

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "policies/tiny_vla_policy.h"
#include "services/learner/learner_core.h"
#include "tests/services/learner/small_learner.h"

namespace rlvla3::testutil {

// A segment of `n` decisions with random observations and actions, all taken
// by behaviour version `version`.
inline void Fill(RolloutSegment* s, int n, uint64_t version, uint32_t seed) {
  std::mt19937 rng(seed);
  RandomObservations(s, &rng);
  // Far below any learner log-prob, so the behaviour IS weight sits at its cap
  // (at -10 against ~-38 per step it would be ~e^-28: no policy gradient).
  for (auto& l : s->log_probs) l = -1e3f;
  for (int t = 0; t < n; ++t) {
    s->values[t] = 0.0f;
    s->rewards[t] = (t == n - 1) ? 1.0f : 0.0f;
    s->executed[t] = 2;
    s->versions[t] = version;
  }
  s->n = n;
  s->has_bootstrap = true;
}

class LearnerTest : public testing::Test {
 protected:
  static std::shared_ptr<TrainablePolicy> Wrap(TinyVLA net) {
    return std::make_shared<TinyVLAPolicy>(net, /*version=*/0);
  }
  static TinyVLA& NetOf(LearnerCore& l) {
    return static_cast<TinyVLAPolicy&>(l.policy()).net();
  }
  void SetUp() override {
    torch::manual_seed(0);
    text_ = torch::ones({1, 4}, torch::kLong);
    lens_ = torch::full({1}, 4, torch::kLong);
    options_.micro_batch = 4;
    options_.global_units = 8;  // two segments of 4
    options_.max_policy_lag = 1;
    options_.lr = 1e-2;
    // The streaming single pass unless a test asks for PPO epochs.
    options_.ppo_epochs = 1;
    options_.minibatches = 1;
    for (int i = 0; i < 4; ++i)
      segs_.push_back(std::make_unique<RolloutSegment>(SmallShape()));
  }
  // Segment i as a whole 2-decision GRPO episode of `group`, return i % 2.
  RolloutSegment* Episode(int i, uint64_t version, uint64_t group) {
    Fill(segs_[i].get(), 2, version, static_cast<uint32_t>(i));
    segs_[i]->group = group;
    segs_[i]->episode_end = true;
    segs_[i]->episode_return = static_cast<float>(i % 2);
    return segs_[i].get();
  }
  std::vector<at::Tensor> Weights(LearnerCore& l) {
    std::vector<at::Tensor> out;
    for (const auto& p : NetOf(l)->parameters())
      out.push_back(p.detach().clone());
    return out;
  }
  static bool Same(const std::vector<at::Tensor>& a,
                   const std::vector<at::Tensor>& b) {
    for (size_t i = 0; i < a.size(); ++i) {
      if (!torch::equal(a[i], b[i])) return false;
    }
    return true;
  }
  at::Tensor text_, lens_;
  LearnerOptions options_;
  std::vector<std::unique_ptr<RolloutSegment>> segs_;
};

}  // namespace rlvla3::testutil

#endif  // RLVLA3_TESTS_SERVICES_ROLES_LEARNER_FIXTURE_H_
