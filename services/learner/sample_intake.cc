#include "services/learner/sample_intake.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "services/learner/advantages.h"

namespace rlvla3 {

SampleIntake::SampleIntake(const SampleIntakeOptions& options,
                           BootstrapValues bootstrap)
    : options_(options),
      bootstrap_(std::move(bootstrap)),
      lost_after_(options.lost_versions_after),
      lost_before_(options.lost_versions_before),
      draw_rng_(options.seed) {}

void SampleIntake::LoseVersions(uint64_t after, uint64_t before) {
  lost_after_ = after;
  lost_before_ = before;
}

SampleIntake::~SampleIntake() = default;

SampleIntake::TrainSegment* SampleIntake::Track(RolloutSegment* s) {
  if (free_tracked_.empty()) {
    tracked_.push_back(std::make_unique<TrainSegment>());
    free_tracked_.push_back(tracked_.back().get());
  }
  TrainSegment* t = free_tracked_.back();
  free_tracked_.pop_back();
  t->rollout = s;
  t->advantages.resize(static_cast<size_t>(s->shape.capacity));
  t->returns.resize(static_cast<size_t>(s->shape.capacity));
  t->unconsumed = 0;
  return t;
}

float SampleIntake::AdvantageOf(const RolloutSegment* s, int t) const {
  for (const auto& ts : tracked_) {
    if (ts->rollout == s && t >= 0 && t < s->n) return ts->advantages[t];
  }
  return std::numeric_limits<float>::quiet_NaN();
}

void SampleIntake::Consume(TrainSegment* t) {
  consumed_.push_back(t->rollout);
  t->rollout = nullptr;
  free_tracked_.push_back(t);
}

void SampleIntake::Add(const std::vector<RolloutSegment*>& segments,
                       uint64_t version) {
  std::vector<RolloutSegment*>& fresh = fresh_;
  fresh.clear();
  for (RolloutSegment* s : segments) {
    const uint64_t oldest = s->min_version();
    // Tagged with a version a killed learner published and lost.
    const bool lost =
        s->n > 0 && s->max_version() > lost_after_ && oldest < lost_before_;
    if (lost) lost_version_samples_ += s->n;
    const bool stale = s->n == 0 || lost || PastBound(version, oldest);
    if (options_.grpo && (stale || poisoned_groups_.count(s->group) > 0)) {
      DropGroupMember(s);
      continue;
    }
    if (stale) {
      dropped_samples_ += s->n;
      consumed_.push_back(s);
      continue;
    }
    fresh.push_back(s);
  }
  if (fresh.empty()) return;
  if (options_.grpo) {
    for (RolloutSegment* s : fresh) AddGrpo(s);
  } else {
    AddPpo(fresh);
  }
}

void SampleIntake::AddPpo(const std::vector<RolloutSegment*>& segs) {
  // V(s_n) for segments cut mid-episode, in one call.
  added_.clear();
  boot_.clear();
  for (RolloutSegment* s : segs) {
    added_.push_back(Track(s));
    if (s->has_bootstrap && !s->terminal[s->n - 1])
      boot_.push_back({added_.back(), s->n, 0, false});
  }
  boot_values_.assign(boot_.size(), 0.0f);
  if (!boot_.empty()) bootstrap_(boot_, &boot_values_);
  size_t k = 0;
  const float weight = 1.0f / static_cast<float>(options_.global_units);
  for (TrainSegment* ts : added_) {
    const RolloutSegment* s = ts->rollout;
    float bootstrap = 0.0f;
    if (s->has_bootstrap && !s->terminal[s->n - 1])
      bootstrap = boot_values_[k++];
    const size_t n = static_cast<size_t>(s->n);
    ComputeGae(absl::MakeConstSpan(s->rewards.data(), n),
               absl::MakeConstSpan(s->values.data(), n),
               absl::MakeConstSpan(s->terminal.data(), n), bootstrap,
               static_cast<float>(options_.gamma),
               static_cast<float>(options_.gae_lambda),
               absl::MakeSpan(ts->advantages.data(), n),
               absl::MakeSpan(ts->returns.data(), n));
    ts->unconsumed = s->n;
    for (int t = 0; t < s->n; ++t) ready_.push_back({ts, t, weight, true});
    ready_unit_count_ += s->n;
  }
  UpdateAdvantageMoments(added_);
}

void SampleIntake::UpdateAdvantageMoments(
    const std::vector<TrainSegment*>& segs) {
  double n = 0, sum = 0, sq = 0;
  for (const TrainSegment* s : segs) {
    for (int t = 0; t < s->rollout->n; ++t) {
      const double a = s->advantages[t];
      n += 1;
      sum += a;
      sq += a * a;
    }
  }
  if (n == 0) return;
  const double mean = sum / n, var = std::max(0.0, sq / n - mean * mean);
  if (!adv_moments_set_) {
    adv_mean_ = mean;
    adv_var_ = var;
    adv_moments_set_ = true;
    return;
  }
  // Exponential moments whose window is about one global batch of samples.
  const double a = n / (n + static_cast<double>(options_.global_units));
  const double delta = mean - adv_mean_;
  adv_mean_ += a * delta;
  adv_var_ = (1 - a) * (adv_var_ + a * delta * delta) + a * var;
}

void SampleIntake::DropGroupMember(RolloutSegment* seg) {
  // A group without one of its episodes has no valid baseline: the members
  // already waiting and the ones still to come are dropped with it.
  int& seen = poisoned_groups_[seg->group];
  auto waiting = groups_.find(seg->group);
  if (waiting != groups_.end()) {
    for (TrainSegment* s : waiting->second) {
      dropped_samples_ += s->rollout->n;
      Consume(s);
      ++seen;
    }
    groups_.erase(waiting);
  }
  dropped_samples_ += seg->n;
  consumed_.push_back(seg);
  if (++seen >= options_.grpo_group_size) poisoned_groups_.erase(seg->group);
}

void SampleIntake::Expire(uint64_t version) {
  ExpireWaitingGroups(version);
  ExpireReady(version);
}

bool SampleIntake::PastBound(uint64_t version, uint64_t sample_version) const {
  return version > sample_version &&
         static_cast<int64_t>(version - sample_version) >
             options_.max_policy_lag;
}

void SampleIntake::ExpireReady(uint64_t version) {
  // Samples admitted within the bound wait past it when more arrived than a
  // global batch trains: they are dropped, never trained at a larger lag.
  // A PPO sample goes alone. A GRPO episode's advantage was normalised over
  // its whole group, so a group with one episode past the bound goes whole
  // (every member, its units with it): survivors would no longer sum to 0.
  stale_groups_.clear();
  if (options_.grpo) {
    for (const SampleRef& r : ready_) {
      if (r.seg == nullptr) continue;
      const RolloutSegment* s = r.seg->rollout;
      if (PastBound(version, s->min_version()) &&
          std::find(stale_groups_.begin(), stale_groups_.end(), s->group) ==
              stale_groups_.end()) {
        stale_groups_.push_back(s->group);
      }
    }
  }
  auto stale = [&](const SampleRef& r) {
    if (r.seg == nullptr) return false;  // an uninformative unit: no samples
    const RolloutSegment* s = r.seg->rollout;
    if (options_.grpo) {
      return std::find(stale_groups_.begin(), stale_groups_.end(), s->group) !=
             stale_groups_.end();
    }
    return PastBound(version, s->versions[r.t]);
  };
  auto keep =
      std::stable_partition(ready_.begin(), ready_.end(),
                            [&](const SampleRef& r) { return !stale(r); });
  for (auto it = keep; it != ready_.end(); ++it) {
    ++dropped_samples_;
    ++aged_out_samples_;
    if (it->unit_end) --ready_unit_count_;
    if (--it->seg->unconsumed == 0) Consume(it->seg);
  }
  ready_.erase(keep, ready_.end());
}

void SampleIntake::ExpireWaitingGroups(uint64_t version) {
  for (auto it = groups_.begin(); it != groups_.end();) {
    uint64_t oldest = version;
    for (const TrainSegment* s : it->second)
      oldest = std::min(oldest, s->rollout->min_version());
    if (static_cast<int64_t>(version - oldest) <= options_.max_policy_lag) {
      ++it;
      continue;
    }
    // Late members of this group are dropped as they come.
    int& seen = poisoned_groups_[it->first];
    for (TrainSegment* s : it->second) {
      dropped_samples_ += s->rollout->n;
      aged_out_samples_ += s->rollout->n;
      ++expired_episodes_;
      Consume(s);
      ++seen;
    }
    if (seen >= options_.grpo_group_size) poisoned_groups_.erase(it->first);
    it = groups_.erase(it);
  }
}

void SampleIntake::AddGrpo(RolloutSegment* seg) {
  std::vector<TrainSegment*>& group = groups_[seg->group];
  group.push_back(Track(seg));
  if (static_cast<int>(group.size()) < options_.grpo_group_size) return;
  std::vector<float> returns;
  for (TrainSegment* s : group) returns.push_back(s->rollout->episode_return);
  ++groups_done_;
  if (std::all_of(returns.begin(), returns.end(),
                  [&](float r) { return r == returns.front(); })) {
    // No signal: not trained (no zero-advantage samples whose only effect
    // would be the optimizer's momentum); each episode still counts as a
    // unit of the global batch.
    for (TrainSegment* s : group) {
      Consume(s);
      ready_.push_back({nullptr, -1, 0.0f, true});
      ++ready_unit_count_;
    }
    groups_.erase(seg->group);
    return;
  }
  ++groups_informative_;
  const std::vector<float> adv = GroupNormalizedAdvantages(
      returns, 1e-6f, static_cast<float>(options_.grpo_std_floor));
  for (size_t i = 0; i < group.size(); ++i) {
    TrainSegment* s = group[i];
    const int n = s->rollout->n;
    for (int t = 0; t < n; ++t) {
      s->advantages[t] = adv[i];
      s->returns[t] = 0.0f;
    }
    DrawDecisions(n);
    const int k = static_cast<int>(drawn_.size());
    const float weight = 1.0f / (static_cast<float>(k) *
                                 static_cast<float>(options_.global_units));
    s->unconsumed = k;
    for (int j = 0; j < k; ++j) {
      ready_.push_back({s, drawn_[j], weight, j == k - 1});
    }
    ++ready_unit_count_;
  }
  groups_.erase(seg->group);
}

void SampleIntake::DrawDecisions(int n) {
  drawn_.resize(static_cast<size_t>(n));
  for (int t = 0; t < n; ++t) drawn_[t] = t;
  int k = static_cast<int>(
      std::ceil(options_.train_decisions * static_cast<double>(n) - 1e-9));
  if (options_.max_train_decisions > 0)
    k = std::min(k, options_.max_train_decisions);
  k = std::clamp(k, std::min(n, 1), n);
  if (k == n) return;
  // A partial Fisher-Yates shuffle: the first k are a uniform draw.
  for (int j = 0; j < k; ++j) {
    std::uniform_int_distribution<int> pick(j, n - 1);
    std::swap(drawn_[j], drawn_[pick(draw_rng_)]);
  }
  drawn_.resize(static_cast<size_t>(k));
  std::sort(drawn_.begin(), drawn_.end());
}

SampleIntake::MicroBatch SampleIntake::TakeMicroBatch(int max_samples,
                                                      int64_t units_left) {
  MicroBatch mb;
  while (!ready_.empty() && static_cast<int>(mb.samples.size()) < max_samples &&
         mb.units < units_left) {
    const SampleRef r = ready_.front();
    ready_.pop_front();
    if (r.unit_end) {
      ++mb.units;
      --ready_unit_count_;
      if (r.seg != nullptr) ++mb.informative_units;
    }
    if (r.seg != nullptr) mb.samples.push_back(r);
  }
  return mb;
}

void SampleIntake::Trained(const std::vector<SampleRef>& samples) {
  for (const SampleRef& r : samples) {
    if (--r.seg->unconsumed == 0) Consume(r.seg);
  }
}

void SampleIntake::TakeGroupCounts(int64_t* groups, int64_t* informative) {
  *groups = groups_done_;
  *informative = groups_informative_;
  groups_done_ = groups_informative_ = 0;
}

int64_t SampleIntake::waiting_episodes() const {
  int64_t n = 0;
  for (const auto& [key, segs] : groups_)
    n += static_cast<int64_t>(segs.size());
  return n;
}

std::vector<RolloutSegment*> SampleIntake::TakeConsumed() {
  std::vector<RolloutSegment*> out;
  out.swap(consumed_);
  return out;
}

}  // namespace rlvla3
