// SampleIntake on its own, with no policy and no device: a PPO segment cut
// mid-episode gets GAE with the value its bootstrap slot was given, samples
// past the lag bound or of a lost version are dropped, counted and handed
// back (at arrival, and when the version moves on while they wait), a GRPO
// group whose returns are all equal counts towards the batch without a sample
// to train, and a segment goes back only once every one of its samples is
// trained.
#include "services/learner/sample_intake.h"

#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <tuple>
#include <vector>

namespace rlvla3 {
namespace {

SegmentShape Shape() {
  SegmentShape s;
  s.width = 4;
  s.height = 4;
  s.chunk = 2;
  s.action_dim = 2;
  s.proprio_dim = 2;
  s.capacity = 4;
  return s;
}

// `n` decisions of behaviour version `version`, reward 1 at the last one,
// values 0.5, no episode end, the next observation in slot n.
void Fill(RolloutSegment* s, int n, uint64_t version) {
  s->Clear();
  s->n = n;
  s->has_bootstrap = true;
  for (int t = 0; t < n; ++t) {
    s->values[t] = 0.5f;
    s->rewards[t] = t == n - 1 ? 1.0f : 0.0f;
    s->executed[t] = 1;
    s->versions[t] = version;
  }
}

struct Bootstrap {
  // Every slot asked for, and the value each gets.
  std::vector<int> slots;
  float value = 2.0f;
  SampleIntake::BootstrapValues Fn() {
    return [this](const std::vector<SampleIntake::SampleRef>& refs,
                  std::vector<float>* values) {
      for (size_t i = 0; i < refs.size(); ++i) {
        slots.push_back(refs[i].t);
        (*values)[i] = value;
      }
    };
  }
};

SampleIntakeOptions Ppo() {
  SampleIntakeOptions o;
  o.gamma = 0.5;
  o.gae_lambda = 1.0;
  o.global_units = 8;
  o.max_policy_lag = 1;
  return o;
}

TEST(SampleIntake, PpoSegmentCutMidEpisodeGetsGaeWithItsBootstrapValue) {
  Bootstrap boot;
  SampleIntake intake(Ppo(), boot.Fn());
  RolloutSegment s(Shape());
  Fill(&s, 3, 0);
  intake.Add({&s}, 0);
  EXPECT_EQ(boot.slots, std::vector<int>{3});
  // gamma 0.5, lambda 1: G2 = 1 + 0.5 * 2 = 2, G1 = 1, G0 = 0.5; minus 0.5.
  EXPECT_FLOAT_EQ(intake.AdvantageOf(&s, 2), 1.5f);
  EXPECT_FLOAT_EQ(intake.AdvantageOf(&s, 1), 0.5f);
  EXPECT_FLOAT_EQ(intake.AdvantageOf(&s, 0), 0.0f);
  EXPECT_EQ(intake.ready_samples(), 3);
  EXPECT_EQ(intake.ready_units(), 3);
}

TEST(SampleIntake, AnEpisodeEndNeedsNoBootstrapValue) {
  Bootstrap boot;
  SampleIntake intake(Ppo(), boot.Fn());
  RolloutSegment s(Shape());
  Fill(&s, 2, 0);
  s.terminal[1] = 1;
  intake.Add({&s}, 0);
  EXPECT_TRUE(boot.slots.empty());
  EXPECT_FLOAT_EQ(intake.AdvantageOf(&s, 1), 0.5f);  // 1 - 0.5
}

TEST(SampleIntake, StaleAndLostVersionSegmentsAreDroppedCountedAndHandedBack) {
  Bootstrap boot;
  SampleIntakeOptions o = Ppo();
  o.lost_versions_after = 6;
  o.lost_versions_before = 9;  // versions 7 and 8 were lost
  SampleIntake intake(o, boot.Fn());
  RolloutSegment stale(Shape()), lost(Shape()), fresh(Shape());
  Fill(&stale, 3, 4);  // lag 6 at version 10
  Fill(&lost, 2, 8);
  Fill(&fresh, 4, 9);
  intake.Add({&stale, &lost, &fresh}, 10);
  EXPECT_EQ(intake.dropped_samples(), 5);
  EXPECT_EQ(intake.lost_version_samples(), 2);
  EXPECT_EQ(intake.aged_out_samples(), 0);  // stale on arrival, not waiting
  EXPECT_EQ(intake.ready_samples(), 4);
  EXPECT_EQ(intake.TakeConsumed(),
            (std::vector<RolloutSegment*>{&stale, &lost}));
}

// More arrived than one global batch trains: the samples left waiting when
// the learner's version moves on are past the bound then, and are dropped,
// never trained at a larger lag (the engine's lag_max stays <= the bound).
TEST(SampleIntake, ReadySamplesPastTheBoundWhenTheVersionMovesAreDropped) {
  Bootstrap boot;
  SampleIntake intake(Ppo(), boot.Fn());  // max_policy_lag 1
  RolloutSegment old_seg(Shape()), newer(Shape());
  Fill(&old_seg, 3, 4);
  Fill(&newer, 2, 5);
  newer.versions[0] = 4;              // a segment spans a weight swap
  intake.Add({&old_seg, &newer}, 5);  // lags 1 and 0: admitted
  SampleIntake::MicroBatch first = intake.TakeMicroBatch(2, 2);
  ASSERT_EQ(first.samples.size(), 2u);
  intake.Trained(first.samples);
  intake.Expire(5);  // the same version: nothing is past the bound
  EXPECT_EQ(intake.ready_samples(), 3);
  intake.Expire(6);  // version 4's samples are at lag 2 now
  EXPECT_EQ(intake.dropped_samples(), 2);
  EXPECT_EQ(intake.aged_out_samples(), 2);
  EXPECT_EQ(intake.ready_samples(), 1);
  EXPECT_EQ(intake.ready_units(), 1);
  EXPECT_EQ(intake.TakeConsumed(), std::vector<RolloutSegment*>{&old_seg});
  SampleIntake::MicroBatch rest = intake.TakeMicroBatch(8, 8);
  ASSERT_EQ(rest.samples.size(), 1u);
  EXPECT_EQ(rest.samples[0].t, 1);  // newer's version-5 sample
  intake.Trained(rest.samples);
  EXPECT_EQ(intake.TakeConsumed(), std::vector<RolloutSegment*>{&newer});
}

TEST(SampleIntake, ASegmentGoesBackOnlyOnceAllItsSamplesAreTrained) {
  Bootstrap boot;
  SampleIntake intake(Ppo(), boot.Fn());
  RolloutSegment s(Shape());
  Fill(&s, 3, 0);
  intake.Add({&s}, 0);
  SampleIntake::MicroBatch first = intake.TakeMicroBatch(2, 100);
  EXPECT_EQ(first.samples.size(), 2u);
  EXPECT_EQ(first.units, 2);
  intake.Trained(first.samples);
  EXPECT_TRUE(intake.TakeConsumed().empty());
  SampleIntake::MicroBatch rest = intake.TakeMicroBatch(2, 100);
  ASSERT_EQ(rest.samples.size(), 1u);
  intake.Trained(rest.samples);
  EXPECT_EQ(intake.TakeConsumed(), std::vector<RolloutSegment*>{&s});
}

TEST(SampleIntake, AMicroBatchStopsAtTheGlobalBatchsUnitsLeft) {
  Bootstrap boot;
  SampleIntake intake(Ppo(), boot.Fn());
  RolloutSegment s(Shape());
  Fill(&s, 4, 0);
  intake.Add({&s}, 0);
  EXPECT_EQ(intake.TakeMicroBatch(32, 3).samples.size(), 3u);
  EXPECT_EQ(intake.ready_units(), 1);
}

TEST(SampleIntake, AUniformGrpoGroupCountsTowardsTheBatchWithNothingToTrain) {
  Bootstrap boot;
  SampleIntakeOptions o = Ppo();
  o.grpo = true;
  o.grpo_group_size = 2;
  SampleIntake intake(o, boot.Fn());
  RolloutSegment a(Shape()), b(Shape()), c(Shape()), d(Shape());
  for (RolloutSegment* s : {&a, &b, &c, &d}) Fill(s, 2, 0);
  a.group = b.group = 1;  // both fail: no signal
  c.group = d.group = 2;
  c.episode_return = 1.0f;  // one succeeds: informative
  intake.Add({&a}, 0);
  EXPECT_EQ(intake.waiting_episodes(), 1);
  intake.Add({&b, &c, &d}, 0);
  EXPECT_EQ(intake.ready_units(), 4);
  SampleIntake::MicroBatch mb = intake.TakeMicroBatch(32, 100);
  EXPECT_EQ(mb.units, 4);
  EXPECT_EQ(mb.informative_units, 2);
  EXPECT_EQ(mb.samples.size(), 4u);  // c's and d's two decisions
  EXPECT_EQ(intake.TakeConsumed(), (std::vector<RolloutSegment*>{&a, &b}));
  int64_t groups = 0, informative = 0;
  intake.TakeGroupCounts(&groups, &informative);
  EXPECT_EQ(groups, 2);
  EXPECT_EQ(informative, 1);
  EXPECT_GT(intake.AdvantageOf(&c, 0), 0.0f);
  EXPECT_LT(intake.AdvantageOf(&d, 0), 0.0f);
}

// A GRPO group's advantages are normalised over all its episodes, so when
// one member waits past the lag bound the whole group goes, its fresher
// members too: survivors trained alone would not sum to zero (issue 59).
TEST(SampleIntake, AGroupWithAMemberPastTheBoundIsDroppedWhole) {
  Bootstrap boot;
  SampleIntakeOptions o = Ppo();  // max_policy_lag 1
  o.grpo = true;
  o.grpo_group_size = 2;
  SampleIntake intake(o, boot.Fn());
  RolloutSegment a(Shape()), b(Shape()), c(Shape()), d(Shape());
  Fill(&a, 2, 4);
  Fill(&b, 2, 5);
  Fill(&c, 2, 5);
  Fill(&d, 2, 5);
  a.group = b.group = 1;
  c.group = d.group = 2;
  a.episode_return = c.episode_return = 1.0f;  // both groups informative
  intake.Add({&a, &b, &c, &d}, 5);             // lags 1 and 0: admitted
  EXPECT_EQ(intake.ready_units(), 4);
  intake.Expire(6);  // a is at lag 2: group 1 goes, b with it
  EXPECT_EQ(intake.dropped_samples(), 4);
  EXPECT_EQ(intake.aged_out_samples(), 4);
  EXPECT_EQ(intake.ready_units(), 2);
  EXPECT_EQ(intake.TakeConsumed(), (std::vector<RolloutSegment*>{&a, &b}));
  SampleIntake::MicroBatch mb = intake.TakeMicroBatch(32, 100);
  ASSERT_EQ(mb.samples.size(), 4u);
  float sum = 0;
  for (const SampleIntake::SampleRef& r : mb.samples) {
    EXPECT_EQ(r.seg->rollout->group, 2u);
    sum += intake.AdvantageOf(r.seg->rollout, r.t);
  }
  EXPECT_NEAR(sum, 0.0f, 1e-5);
}

// GRPO trains a random share of each episode's decisions (and at most a
// cap), each weighted 1 / the drawn count so an episode's weight is the same
// whatever share is trained; the episode goes back once those are trained.
TEST(SampleIntake, AShareOfEachEpisodesDecisionsIsTrained) {
  for (const auto& [share, cap, want] :
       {std::tuple<double, int, int>{0.5, 0, 2}, {1.0, 1, 1}, {1.0, 0, 4}}) {
    Bootstrap boot;
    SampleIntakeOptions o = Ppo();
    o.grpo = true;
    o.grpo_group_size = 2;
    o.train_decisions = share;
    o.max_train_decisions = cap;
    SampleIntake intake(o, boot.Fn());
    RolloutSegment a(Shape()), b(Shape());
    Fill(&a, 4, 0);
    Fill(&b, 4, 0);
    a.group = b.group = 1;
    a.episode_return = 1.0f;
    intake.Add({&a, &b}, 0);
    EXPECT_EQ(intake.ready_samples(), 2 * want);
    EXPECT_EQ(intake.ready_units(), 2);
    SampleIntake::MicroBatch mb = intake.TakeMicroBatch(32, 100);
    ASSERT_EQ(mb.samples.size(), static_cast<size_t>(2 * want));
    EXPECT_EQ(mb.units, 2);
    float weight_a = 0;
    std::set<int> drawn_a;
    for (const SampleIntake::SampleRef& r : mb.samples) {
      if (r.seg->rollout != &a) continue;
      weight_a += r.weight;
      drawn_a.insert(r.t);
    }
    EXPECT_EQ(drawn_a.size(), static_cast<size_t>(want));  // distinct
    EXPECT_NEAR(weight_a, 1.0f / 8, 1e-6);  // one episode of 8 units
    intake.Trained(mb.samples);
    EXPECT_EQ(intake.TakeConsumed().size(), 2u);
  }
}

}  // namespace
}  // namespace rlvla3
