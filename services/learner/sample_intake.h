// File: services/learner/sample_intake.h
// -----------------------------------------------------------------------------
// SampleIntake: the learner's samples, from arrived segments to trained ones,
// without a network or a device. Segments arrive (Add) and are dropped past
// the lag bound (or tagged with a version a killed learner lost); the rest
// get their advantages: GAE for PPO (the values of segments cut mid-episode
// come from `bootstrap`, one call per Add, and running advantage moments
// are kept for normalisation) or group-normalised returns for GRPO once a
// group of episodes from one initial state is complete (a group that lost a
// member, or waited past the lag bound, is dropped whole; one whose returns
// are all equal is counted towards the batch and never trained). Their
// samples queue as units of the global batch; TakeMicroBatch hands them out
// and a segment goes back (TakeConsumed) once all its samples are Trained.
// The per-segment state is recycled: nothing is allocated once warm.
//
// Example:
//   SampleIntake intake(options, bootstrap_values);
//   intake.Add(segments, version);
//   SampleIntake::MicroBatch mb = intake.TakeMicroBatch(32, units_left);
//   ... train mb.samples ...;  intake.Trained(mb.samples);
//   for (RolloutSegment* s : intake.TakeConsumed()) pool.Release(s);
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_LEARNER_SAMPLE_INTAKE_H_
#define RLVLA3_SERVICES_LEARNER_SAMPLE_INTAKE_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "runtime/channels/rollout_segment.h"

namespace rlvla3 {

struct SampleIntakeOptions {
  bool grpo = false;  // group-normalised returns; else PPO's GAE
  double gamma = 0.99, gae_lambda = 0.95;
  int64_t global_units = 128;  // samples (PPO) or episodes (GRPO) per batch
  int64_t max_policy_lag = 1;  // older samples are dropped
  int grpo_group_size = 4;
  // GRPO: of an episode's n decisions, k = ceil(train_decisions x n), at
  // most max_train_decisions (0: no cap), are trained, drawn at random
  // (seeded by `seed`), each weighted 1 / k: the advantage is the episode's,
  // so the mean over the drawn ones is an unbiased estimate of the mean over
  // all, at k / n of the learner's work.
  double train_decisions = 1.0;
  int max_train_decisions = 0;
  uint64_t seed = 0;
  // GRPO: the group's return std is taken as at least this (advantages.h).
  double grpo_std_floor = 0.0;
  // Versions published and lost with a killed learner (strictly between).
  uint64_t lost_versions_after = 0, lost_versions_before = 0;
};

class SampleIntake {
 public:
  // The learner's state of one arrived segment: what does not cross the
  // segment channel.
  struct TrainSegment {
    RolloutSegment* rollout = nullptr;
    std::vector<float> advantages, returns;
    int unconsumed = 0;  // samples not yet trained on
  };
  // Sample `t` of a segment; seg == nullptr: a unit (episode) of an
  // uninformative GRPO group, counted towards the global batch, never
  // trained.
  struct SampleRef {
    TrainSegment* seg;
    int t;
    float weight;   // loss weight
    bool unit_end;  // completes one unit of the global batch
  };
  // V(s) of each slot (samples[i].seg->rollout, samples[i].t) into values[i].
  using BootstrapValues = std::function<void(
      const std::vector<SampleRef>& slots, std::vector<float>* values)>;
  struct MicroBatch {
    std::vector<SampleRef> samples;  // to train (seg != nullptr)
    int64_t units = 0;               // units of the global batch they end
    int64_t informative_units = 0;   // of them, with samples to train
  };

  SampleIntake(const SampleIntakeOptions& options, BootstrapValues bootstrap);
  ~SampleIntake();

  // Takes ownership of the segments until TakeConsumed hands them back;
  // `version` is the learner's, for the lag bound.
  void Add(const std::vector<RolloutSegment*>& segments, uint64_t version);
  // The next ready samples, at most `max_samples` of them and no more than
  // `units_left` units.
  MicroBatch TakeMicroBatch(int max_samples, int64_t units_left);
  // `samples` are trained: segments whose samples all are go back.
  void Trained(const std::vector<SampleRef>& samples);
  // From now on, samples of versions strictly between `after` and `before`
  // are lost (in place of the options' range): the learner jumped its
  // version over versions another learner published.
  void LoseVersions(uint64_t after, uint64_t before);
  // The learner moved to `version`: drops waiting GRPO groups whose oldest
  // member is past the lag bound, and ready samples now past it (a PPO
  // sample by its own version; a GRPO group whole, every member, once one
  // episode is past it by its oldest sample, as its advantages were
  // normalised over all of them), so no sample is ever trained at a lag
  // above the bound.
  void Expire(uint64_t version);
  // Segments whose samples are all trained (or that were dropped).
  std::vector<RolloutSegment*> TakeConsumed();
  // GRPO groups completed, and informative ones, since the last call.
  void TakeGroupCounts(int64_t* groups, int64_t* informative);

  int64_t ready_samples() const { return static_cast<int64_t>(ready_.size()); }
  int64_t ready_units() const { return ready_unit_count_; }
  int64_t dropped_samples() const { return dropped_samples_; }
  int64_t lost_version_samples() const { return lost_version_samples_; }
  int64_t expired_episodes() const { return expired_episodes_; }
  // Of dropped_samples, those admitted within the lag bound that waited until
  // the version moved past it (Expire): the learner, not the rollout, was
  // behind.
  int64_t aged_out_samples() const { return aged_out_samples_; }
  int64_t waiting_episodes() const;  // GRPO: in incomplete groups
  // PPO: the running advantage moments (about one global batch of samples).
  double advantage_mean() const { return adv_mean_; }
  double advantage_var() const { return adv_var_; }
  // The advantage of sample `t` of a segment held (NaN if none such).
  float AdvantageOf(const RolloutSegment* s, int t) const;

 private:
  TrainSegment* Track(RolloutSegment* s);
  // All of `t`'s samples are trained (or dropped): its rollout goes back.
  void Consume(TrainSegment* t);
  void AddPpo(const std::vector<RolloutSegment*>& segs);
  void UpdateAdvantageMoments(const std::vector<TrainSegment*>& segs);
  void AddGrpo(RolloutSegment* seg);
  // The decisions of an n-decision episode to train, in order, into drawn_.
  void DrawDecisions(int n);
  void DropGroupMember(RolloutSegment* seg);
  void ExpireWaitingGroups(uint64_t version);
  void ExpireReady(uint64_t version);
  bool PastBound(uint64_t version, uint64_t sample_version) const;

  const SampleIntakeOptions options_;
  const BootstrapValues bootstrap_;
  std::deque<SampleRef> ready_;
  std::vector<RolloutSegment*> consumed_;
  std::map<uint64_t, std::vector<TrainSegment*>> groups_;  // GRPO
  std::vector<std::unique_ptr<TrainSegment>> tracked_;
  std::vector<TrainSegment*> free_tracked_;
  // GRPO groups that lost a member to the lag bound -> members seen so far.
  std::map<uint64_t, int> poisoned_groups_;
  int64_t groups_done_ = 0, groups_informative_ = 0;
  int64_t dropped_samples_ = 0, expired_episodes_ = 0, aged_out_samples_ = 0;
  int64_t lost_version_samples_ = 0;
  uint64_t lost_after_, lost_before_;  // the lost range (exclusive)
  int64_t ready_unit_count_ = 0;
  bool adv_moments_set_ = false;
  double adv_mean_ = 0, adv_var_ = 1;
  // Reused by Add and AddPpo (nothing allocated per call once warm).
  std::vector<RolloutSegment*> fresh_;
  std::vector<TrainSegment*> added_;
  std::vector<SampleRef> boot_;
  std::vector<float> boot_values_;
  std::vector<uint64_t> stale_groups_;  // ExpireReady's, reused
  std::mt19937_64 draw_rng_;            // the decisions trained
  std::vector<int> drawn_;              // AddGrpo's, reused
};

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_LEARNER_SAMPLE_INTAKE_H_
