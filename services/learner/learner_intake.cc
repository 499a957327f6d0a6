// LearnerCore's sample intake and staging: segments arrive (Add), are
// dropped past the lag bound, and get their advantages: GAE for PPO (with one
// batched value pass for the segments cut mid-episode, and running advantage
// moments for normalisation) or group-normalised returns for GRPO once a
// group of episodes from one initial state is complete (a group that lost a
// member, or waited past the lag bound, is dropped whole). Their samples
// queue as ready units; the learner's per-segment state is recycled and a
// segment goes back (TakeConsumed) once all its samples are trained. Prepare
// stages a micro-batch through pinned host memory onto the learner's device;
// RecordLags keeps the policy-lag statistics of what is trained.
#include <torch/torch.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "policies/device.h"
#include "services/learner/advantages.h"
#include "services/learner/learner_core.h"

namespace rlvla3 {

PolicyInput GatherFromSegments(absl::Span<RolloutSegment* const> segs,
                               absl::Span<const int> slots,
                               const at::Tensor& text,
                               const at::Tensor& text_len, at::Tensor* tokens,
                               const at::Device& device) {
  const int64_t B = static_cast<int64_t>(segs.size());
  const SegmentShape& sh = segs.front()->shape;
  const at::TensorOptions bytes = HostStaging(device, torch::kByte);
  PolicyInput in;
  in.agentview = torch::empty({B, sh.height, sh.width, 3}, bytes);
  in.wrist = torch::empty({B, sh.height, sh.width, 3}, bytes);
  in.proprio =
      torch::empty({B, sh.proprio_dim}, HostStaging(device, torch::kFloat));
  at::Tensor task = torch::empty({B}, torch::kLong);  // host: an index
  const size_t img = segs.front()->image_bytes;
  const int64_t ka = static_cast<int64_t>(sh.chunk) * sh.action_dim;
  at::Tensor tok;
  if (tokens != nullptr) {
    tok = torch::empty({B, sh.chunk, sh.action_dim}, bytes);
  }
  for (int64_t b = 0; b < B; ++b) {
    RolloutSegment* s = segs[b];
    const int t = slots[b];
    std::memcpy(in.agentview.data_ptr<uint8_t>() + b * img, s->agentview_at(t),
                img);
    std::memcpy(in.wrist.data_ptr<uint8_t>() + b * img, s->wrist_at(t), img);
    std::memcpy(in.proprio.data_ptr<float>() + b * sh.proprio_dim,
                s->proprio_at(t), sizeof(float) * sh.proprio_dim);
    task.data_ptr<int64_t>()[b] = s->task;
    if (tokens != nullptr) {
      std::memcpy(tok.data_ptr<uint8_t>() + b * ka, s->tokens_at(t), ka);
    }
  }
  // Gathered into staging memory (pinned for a GPU), as the rest.
  in.text = torch::empty({B, text.size(1)}, HostStaging(device, torch::kLong));
  torch::index_select_out(in.text, text, 0, task);
  in.text_len = torch::empty({B}, HostStaging(device, torch::kLong));
  torch::index_select_out(in.text_len, text_len, 0, task);
  if (tokens != nullptr) {
    *tokens = torch::empty(tok.sizes(), HostStaging(device, torch::kLong));
    tokens->copy_(tok);
  }
  return in;
}

PolicyInput LearnerCore::Gather(const std::vector<SampleRef>& batch,
                                at::Tensor* tokens) {
  std::vector<RolloutSegment*> segs;
  std::vector<int> slots;
  for (const SampleRef& r : batch) {
    segs.push_back(r.seg->rollout);
    slots.push_back(r.t);
  }
  const at::Device& device = options_.device;
  PolicyInput in =
      GatherFromSegments(segs, slots, text_, text_len_, tokens, device);
  if (tokens != nullptr) *tokens = ToDevice(*tokens, device);
  return ToDevice(in, device);
}

LearnerCore::TrainSegment* LearnerCore::Track(RolloutSegment* s) {
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

float LearnerCore::AdvantageOf(const RolloutSegment* s, int t) const {
  for (const auto& ts : tracked_) {
    if (ts->rollout == s && t >= 0 && t < s->n) return ts->advantages[t];
  }
  return std::numeric_limits<float>::quiet_NaN();
}

void LearnerCore::Consume(TrainSegment* t) {
  consumed_.push_back(t->rollout);
  t->rollout = nullptr;
  free_tracked_.push_back(t);
}

void LearnerCore::Add(const std::vector<RolloutSegment*>& segments) {
  const bool grpo = options_.algorithm == "grpo";
  std::vector<RolloutSegment*> fresh;
  for (RolloutSegment* s : segments) {
    const uint64_t oldest = s->min_version();
    // Tagged with a version a killed learner published and lost.
    const bool lost = s->n > 0 &&
                      s->max_version() > options_.lost_versions_after &&
                      oldest < options_.lost_versions_before;
    if (lost) lost_version_samples_ += s->n;
    const bool stale =
        s->n == 0 || lost ||
        (version_ > oldest &&
         static_cast<int64_t>(version_ - oldest) > options_.max_policy_lag);
    if (grpo && (stale || poisoned_groups_.count(s->group) > 0)) {
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
  if (options_.algorithm == "grpo") {
    for (RolloutSegment* s : fresh) AddGrpo(s);
  } else {
    AddPpo(fresh);
  }
}

void LearnerCore::AddPpo(const std::vector<RolloutSegment*>& segs) {
  // V(s_n) for segments cut mid-episode, in one forward pass.
  std::vector<TrainSegment*> tracked;
  std::vector<SampleRef> boot;
  for (RolloutSegment* s : segs) {
    tracked.push_back(Track(s));
    if (s->has_bootstrap && !s->terminal[s->n - 1])
      boot.push_back({tracked.back(), s->n, 0, false});
  }
  std::vector<float> boot_values(boot.size(), 0.0f);
  if (!boot.empty()) {
    torch::NoGradGuard no_grad;
    PolicyInput in = Gather(boot, nullptr);
    at::Tensor v;
    {
      AutocastGuard autocast(options_.device, options_.bf16);
      v = policy_->Values(in);
    }
    v = v.to(torch::kCPU, torch::kFloat).contiguous();
    std::memcpy(boot_values.data(), v.data_ptr<float>(),
                sizeof(float) * boot.size());
  }
  size_t k = 0;
  const float weight = 1.0f / static_cast<float>(options_.global_units);
  for (TrainSegment* ts : tracked) {
    const RolloutSegment* s = ts->rollout;
    float bootstrap = 0.0f;
    if (s->has_bootstrap && !s->terminal[s->n - 1])
      bootstrap = boot_values[k++];
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
  UpdateAdvantageMoments(tracked);
}

void LearnerCore::UpdateAdvantageMoments(
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

void LearnerCore::DropGroupMember(RolloutSegment* seg) {
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

void LearnerCore::ExpireWaitingGroups() {
  for (auto it = groups_.begin(); it != groups_.end();) {
    uint64_t oldest = version_;
    for (const TrainSegment* s : it->second)
      oldest = std::min(oldest, s->rollout->min_version());
    if (static_cast<int64_t>(version_ - oldest) <= options_.max_policy_lag) {
      ++it;
      continue;
    }
    // Late members of this group are dropped as they come.
    int& seen = poisoned_groups_[it->first];
    for (TrainSegment* s : it->second) {
      dropped_samples_ += s->rollout->n;
      ++expired_episodes_;
      Consume(s);
      ++seen;
    }
    if (seen >= options_.grpo_group_size) poisoned_groups_.erase(it->first);
    it = groups_.erase(it);
  }
}

void LearnerCore::AddGrpo(RolloutSegment* seg) {
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
  const std::vector<float> adv = GroupNormalizedAdvantages(returns);
  for (size_t i = 0; i < group.size(); ++i) {
    TrainSegment* s = group[i];
    const int n = s->rollout->n;
    const float weight = 1.0f / (static_cast<float>(n) *
                                 static_cast<float>(options_.global_units));
    s->unconsumed = n;
    for (int t = 0; t < n; ++t) {
      s->advantages[t] = adv[i];
      s->returns[t] = 0.0f;
      ready_.push_back({s, t, weight, t == n - 1});
    }
    ++ready_unit_count_;
  }
  groups_.erase(seg->group);
}

int64_t LearnerCore::ready_units() const { return ready_unit_count_; }

bool LearnerCore::ShouldTrain() const {
  if (!CanTrain()) return false;
  return ready_samples() >= options_.micro_batch ||
         ready_unit_count_ >= options_.global_units - units_trained_;
}

bool LearnerCore::CanTrain() const {
  return !ready_.empty() && units_trained_ < options_.global_units;
}

bool LearnerCore::ReadyToStep() const {
  return units_trained_ >= options_.global_units;
}

LearnerCore::MicroBatch LearnerCore::Prepare(
    const std::vector<SampleRef>& batch) {
  const int64_t B = static_cast<int64_t>(batch.size());
  const SegmentShape& sh = batch.front().seg->rollout->shape;
  const at::Device& device = options_.device;
  const at::TensorOptions host = HostStaging(device, torch::kFloat);
  MicroBatch mb;
  mb.in = Gather(batch, &mb.tokens);
  mb.mask = torch::zeros({B, sh.chunk}, host);
  at::Tensor behav_k = torch::empty({B, sh.chunk}, host);
  mb.adv = torch::empty({B}, host);
  mb.ret = torch::empty({B}, host);
  mb.weight = torch::empty({B}, host);
  auto m = mb.mask.accessor<float, 2>();
  for (int64_t b = 0; b < B; ++b) {
    const RolloutSegment* s = batch[b].seg->rollout;
    const int t = batch[b].t;
    const int exec = std::max<int>(1, s->executed[t]);
    for (int k = 0; k < exec && k < sh.chunk; ++k) m[b][k] = 1.0f;
    std::memcpy(behav_k.data_ptr<float>() + b * sh.chunk, s->log_probs_at(t),
                sizeof(float) * sh.chunk);
    mb.adv.data_ptr<float>()[b] = batch[b].seg->advantages[t];
    mb.ret.data_ptr<float>()[b] = batch[b].seg->returns[t];
    mb.weight.data_ptr<float>()[b] = batch[b].weight;
  }
  mb.mask = ToDevice(mb.mask, device);
  mb.behav_steps = ToDevice(behav_k, device) * mb.mask;
  mb.behav = mb.behav_steps.sum(1);
  mb.adv = ToDevice(mb.adv, device);
  mb.ret = ToDevice(mb.ret, device);
  mb.weight = ToDevice(mb.weight, device);
  return mb;
}

void LearnerCore::RecordLags(const std::vector<SampleRef>& batch) {
  for (size_t b = 0; b < batch.size(); ++b) {
    const RolloutSegment* s = batch[b].seg->rollout;
    const double lag = static_cast<double>(
        version_ - std::min(version_, s->versions[batch[b].t]));
    if (samples_trained_ == 0 && b == 0) {
      lag_min_ = lag_max_ = lag;
    } else {
      lag_min_ = std::min(lag_min_, lag);
      lag_max_ = std::max(lag_max_, lag);
    }
    lag_sum_ += lag;
    const size_t bucket = static_cast<size_t>(lag);
    if (lag_hist_.size() <= bucket) lag_hist_.resize(bucket + 1, 0);
    ++lag_hist_[bucket];
  }
}

int64_t LearnerCore::waiting_episodes() const {
  int64_t n = 0;
  for (const auto& [key, segs] : groups_)
    n += static_cast<int64_t>(segs.size());
  return n;
}

std::vector<RolloutSegment*> LearnerCore::TakeConsumed() {
  std::vector<RolloutSegment*> out;
  out.swap(consumed_);
  return out;
}

}  // namespace rlvla3
