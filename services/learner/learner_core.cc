#include "services/learner/learner_core.h"

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "policies/device.h"
#include "services/learner/advantages.h"
#include "services/learner/optimizer_shards.h"

namespace rlvla3 {

LearnerCore::LearnerCore(std::shared_ptr<TrainablePolicy> policy,
                         at::Tensor text, at::Tensor text_len,
                         const LearnerOptions& options, uint64_t version,
                         GradientReducer* reducer)
    : policy_(std::move(policy)),
      reducer_(reducer),
      text_(std::move(text)),
      text_len_(std::move(text_len)),
      options_(options),
      version_(version),
      lr_(options.lr),
      shuffle_rng_(options.shuffle_seed) {
  policy_->To(options_.device);
  policy_->SetTraining(true);
  // Three parameter groups, each at its own rate: the value head (fit from
  // scratch after SFT, on stopped-gradient features), the action heads'
  // log-temperatures (one scalar per action dimension: like a Gaussian
  // policy's log-std, it needs a far larger step than the weights to move
  // within a run) and everything else.
  TrainablePolicy::ParameterGroups g = policy_->Parameters();
  std::vector<at::Tensor>& policy_params = g.weights;
  std::vector<at::Tensor>& value_params = g.value;
  std::vector<at::Tensor>& scale_params = g.action_scale;
  for (auto* group : {&g.weights, &g.value, &g.action_scale})
    params_.insert(params_.end(), group->begin(), group->end());
  // ZeRO-1: this rank's optimizer holds only the parameters it owns.
  std::vector<int64_t> numels;
  for (const at::Tensor& p : params_) numels.push_back(p.numel());
  owners_ =
      AssignShardOwners(numels, distributed() ? reducer_->world_size() : 1);
  const int rank = distributed() ? reducer_->rank() : 0;
  size_t index = 0;
  for (auto* group : {&g.weights, &g.value, &g.action_scale}) {
    std::vector<at::Tensor> owned;
    for (const at::Tensor& p : *group) {
      if (owners_[index++] == rank) owned.push_back(p);
    }
    group->swap(owned);
  }
  const auto group_options = [](double lr, double weight_decay) {
    return std::make_unique<torch::optim::AdamWOptions>(
        torch::optim::AdamWOptions(lr).weight_decay(weight_decay));
  };
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(policy_params,
                      group_options(options_.lr, options_.weight_decay));
  groups.emplace_back(value_params,
                      group_options(options_.value_lr, options_.weight_decay));
  // A temperature has no scale to decay towards: no weight decay.
  if (!scale_params.empty()) {
    groups.emplace_back(scale_params,
                        group_options(options_.action_scale_lr, 0.0));
  }
  optimizer_ = std::make_unique<torch::optim::AdamW>(
      groups, torch::optim::AdamWOptions(options_.lr)
                  .weight_decay(options_.weight_decay));
}

LearnerCore::~LearnerCore() = default;

int64_t LearnerCore::waiting_episodes() const {
  int64_t n = 0;
  for (const auto& [key, segs] : groups_)
    n += static_cast<int64_t>(segs.size());
  return n;
}

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
  at::Tensor task = torch::empty({B}, torch::kLong);
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
  in.text = text.index_select(0, task);
  in.text_len = text_len.index_select(0, task);
  if (tokens != nullptr) *tokens = tok.to(torch::kLong);
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

EvalResult LearnerCore::Evaluate(const PolicyInput& in,
                                 const at::Tensor& tokens) {
  EvalResult e;
  {
    AutocastGuard autocast(options_.device, options_.bf16);
    e = policy_->Evaluate(in, tokens);
  }
  if (options_.bf16) {
    e.log_probs = e.log_probs.to(torch::kFloat);
    e.entropy = e.entropy.to(torch::kFloat);
    e.values = e.values.to(torch::kFloat);
  }
  return e;
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
    const bool stale = s->n == 0 || (version_ > oldest &&
                                     static_cast<int64_t>(version_ - oldest) >
                                         options_.max_policy_lag);
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
  mb.behav = ToDevice((behav_k * mb.mask).sum(1), device);
  mb.mask = ToDevice(mb.mask, device);
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

PpoLossTerms LearnerCore::Loss(const MicroBatch& mb, const EvalResult& e,
                               const at::Tensor& prox, const at::Tensor& adv) {
  PpoLossInput li;
  li.log_probs = (e.log_probs * mb.mask).sum(1);
  li.prox_log_probs = prox.defined() ? prox : li.log_probs.detach();
  li.behav_log_probs = mb.behav;
  li.advantages = adv;
  li.returns = mb.ret;
  li.values = e.values;
  li.entropy = (e.entropy * mb.mask).sum(1) / mb.mask.sum(1);
  li.weights = mb.weight;
  PpoLossOptions lo = options_.loss;
  if (options_.algorithm == "grpo") lo.value_coef = 0;
  if (options_.algorithm != "grpo" &&
      steps_taken_ < options_.critic_warmup_steps) {
    // Critic warm-up (e.g. after SFT, whose value head is untrained): no
    // policy gradient until the values mean something.
    li.advantages = torch::zeros_like(adv);
    lo.entropy_coef = 0;
  }
  if (options_.target_kl > 0) {
    kl_in_ = mb.in;
    kl_tokens_ = mb.tokens;
    kl_mask_ = mb.mask;
    kl_log_probs_ = li.prox_log_probs.detach();
  }
  return DecoupledPpoLoss(li, lo);
}

void LearnerCore::TrainMicroBatch() {
  std::vector<SampleRef> batch;
  int64_t units = units_trained_;
  while (!ready_.empty() &&
         static_cast<int>(batch.size()) < options_.micro_batch &&
         units < options_.global_units) {
    batch.push_back(ready_.front());
    ready_.pop_front();
    if (batch.back().unit_end) {
      ++units;
      --ready_unit_count_;
    }
  }
  if (batch.empty()) return;
  RecordLags(batch);
  samples_trained_ += static_cast<int64_t>(batch.size());
  units_trained_ = units;
  if (multi_pass()) {
    // Trained at Step, after the whole global batch is here; the segments
    // stay with the learner until then.
    RecordProximal(batch);
    return;
  }
  MicroBatch mb = Prepare(batch);
  at::Tensor adv = mb.adv;
  if (options_.algorithm != "grpo" && options_.normalize_advantages) {
    adv = (adv - adv_mean_) / (std::sqrt(adv_var_) + 1e-8);
  }
  EvalResult e = Evaluate(mb.in, mb.tokens);
  PpoLossTerms terms = Loss(mb, e, at::Tensor(), adv);
  at::Tensor loss = terms.loss * loss_scale_;
  Backward(loss, units_trained_ >= options_.global_units);

  sums_.Add(terms, loss.detach());
  for (const SampleRef& r : batch) {
    if (--r.seg->unconsumed == 0) Consume(r.seg);
  }
}

void LearnerCore::LossSums::Add(const PpoLossTerms& t, const at::Tensor& loss) {
  const at::Tensor& r = t.ratio;
  const at::Tensor add[] = {
      loss,
      t.policy_loss,
      t.value_loss,
      t.entropy,
      t.clipped.sum(),
      t.approx_kl.sum(),
      ((r - 1) - r.log()).sum(),  // k3 estimate of KL(prox || theta)
      t.is_weight.sum(),
      t.is_weight.min(),
      t.is_weight.max(),
      r.sum(),
      r.min(),
      r.max()};
  for (int f = 0; f < kFields; ++f) {
    if (!v[f].defined()) {
      v[f] = add[f];
    } else if (f == kIsMin || f == kRatioMin) {
      v[f] = torch::min(v[f], add[f]);
    } else if (f == kIsMax || f == kRatioMax) {
      v[f] = torch::max(v[f], add[f]);
    } else {
      v[f] = v[f] + add[f];
    }
  }
}

at::Tensor LearnerCore::LossSums::Pack() const {
  return torch::stack(std::vector<at::Tensor>(v, v + kFields))
      .to(torch::kDouble);
}

void LearnerCore::Backward(const at::Tensor& loss, bool last_of_step) {
  if (!last_of_step || !distributed() || !group_error_.ok() ||
      !options_.overlap_allreduce) {
    loss.backward();
    return;
  }
  reducer_->OverlapBegin(params_);
  std::vector<std::pair<size_t, unsigned>> hooks;
  hooks.reserve(params_.size());
  for (size_t i = 0; i < params_.size(); ++i) {
    // A leaf's hook sees its gradient before accumulation: the final value
    // is what earlier micro-batches accumulated plus this one.
    hooks.emplace_back(i,
                       params_[i].register_hook([this, i](const at::Tensor& g) {
                         const at::Tensor& acc = params_[i].grad();
                         reducer_->OverlapReady(i, acc.defined() ? acc + g : g);
                       }));
  }
  loss.backward();
  for (const auto& [i, h] : hooks) params_[i].remove_hook(h);
  overlapped_ = true;
}

void LearnerCore::ZeroGradients() {
  // Every parameter's, not only the optimizer's: with ZeRO-1 it holds this
  // rank's shard, and the others' gradients must not accumulate either.
  for (at::Tensor& p : params_) {
    if (!p.grad().defined()) continue;
    p.mutable_grad().detach_();
    p.mutable_grad().zero_();
  }
}

void LearnerCore::StepOptimizer() {
  optimizer_->step();
  if (!distributed() || !group_error_.ok()) return;
  torch::NoGradGuard no_grad;
  if (absl::Status s = reducer_->GatherShards(absl::MakeSpan(params_), owners_);
      !s.ok()) {
    group_error_ = s;
  }
}

absl::Status LearnerCore::SaveTrainingState(const std::string& dir) {
  const int rank = distributed() ? reducer_->rank() : 0;
  const int world = distributed() ? reducer_->world_size() : 1;
  absl::Status s = SaveOptimizerShard(dir, *optimizer_, params_, owners_, rank,
                                      world, {version_, steps_taken_, lr_});
  // Complete only once every rank's shard is written: the ranks agree (a
  // barrier too), then rank 0 marks the checkpoint.
  absl::StatusOr<bool> failed =
      distributed() ? reducer_->AnyOf(!s.ok()) : absl::StatusOr<bool>(!s.ok());
  if (!failed.ok()) {
    if (group_error_.ok()) group_error_ = failed.status();
    return failed.status();
  }
  if (!s.ok()) return s;
  if (*failed) {
    return absl::AbortedError(absl::StrCat(
        dir, ": another rank could not write its optimizer shard"));
  }
  return rank == 0 ? MarkOptimizerShardsComplete(dir, world) : absl::OkStatus();
}

absl::Status LearnerCore::LoadTrainingState(const std::string& dir) {
  const int rank = distributed() ? reducer_->rank() : 0;
  absl::StatusOr<LearnerTrainingState> s =
      LoadOptimizerShards(dir, *optimizer_, params_, owners_, rank);
  if (!s.ok()) return s.status();
  if (s->version != version_) {
    return absl::FailedPreconditionError(
        absl::StrCat(dir, ": optimizer state of version ", s->version,
                     ", the policy's weights are version ", version_));
  }
  steps_taken_ = s->steps_taken;
  lr_ = s->lr;
  static_cast<torch::optim::AdamWOptions&>(
      optimizer_->param_groups()[0].options())
      .lr(lr_);
  return absl::OkStatus();
}

absl::Status LearnerCore::SyncParameters() {
  if (!distributed()) return absl::OkStatus();
  torch::NoGradGuard no_grad;
  absl::Status s = reducer_->Broadcast(absl::MakeSpan(params_), 0);
  if (!s.ok() && group_error_.ok()) group_error_ = s;
  return s;
}

bool LearnerCore::SkipOnAnyRank(bool local_bad) {
  if (!distributed()) return local_bad;
  if (!group_error_.ok()) return true;
  absl::StatusOr<bool> any = reducer_->AnyOf(local_bad);
  if (!any.ok()) {
    group_error_ = any.status();
    return true;
  }
  return *any;
}

at::Tensor LearnerCore::ClipGradients() {
  if (distributed() && group_error_.ok()) {
    // Every rank reduces the same tensors: a parameter this rank's batch
    // did not reach gets a zero gradient.
    std::vector<at::Tensor> all;
    all.reserve(params_.size());
    for (at::Tensor& p : params_) {
      if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
      all.push_back(p.grad());
    }
    const absl::Status s = overlapped_
                               ? reducer_->OverlapFinish(absl::MakeSpan(all))
                               : reducer_->AllReduceMean(absl::MakeSpan(all));
    if (!s.ok()) group_error_ = s;
  }
  overlapped_ = false;
  std::vector<at::Tensor> grads, norms;
  for (const auto& p : params_) {
    if (!p.grad().defined()) continue;
    grads.push_back(p.grad());
    norms.push_back(p.grad().norm(2));
  }
  if (grads.empty()) {
    return torch::zeros(
        {}, torch::TensorOptions(torch::kDouble).device(options_.device));
  }
  const at::Tensor total = torch::stack(norms).norm(2);
  if (options_.max_grad_norm > 0) {
    // As torch::nn::utils::clip_grad_norm_, without its host read.
    const at::Tensor coef =
        torch::clamp_max(options_.max_grad_norm / (total + 1e-6), 1.0);
    for (at::Tensor& g : grads) g.mul_(coef);
  }
  return total.to(torch::kDouble);
}

LearnerStepStats LearnerCore::Step() {
  if (multi_pass()) return StepEpochs();
  LearnerStepStats st;
  st.samples = samples_trained_;
  // One host read per optimizer step: the gradient norm and, when anything
  // was trained, every loss statistic.
  const at::Tensor norm_t = ClipGradients().reshape({1});
  const at::Tensor all =
      (sums_.empty() ? norm_t : torch::cat({norm_t, sums_.Pack()}))
          .to(torch::kCPU)
          .contiguous();
  const double* v = all.data_ptr<double>();
  const double norm = v[0];
  st.grad_norm = norm;
  if (!sums_.empty()) {
    const double n = static_cast<double>(samples_trained_);
    const double* s = v + 1;
    st.loss = s[LossSums::kLoss];
    st.policy_loss = s[LossSums::kPolicy];
    st.value_loss = s[LossSums::kValue];
    st.entropy = s[LossSums::kEntropy];
    st.clip_fraction = s[LossSums::kClipped] / n;
    st.approx_kl = s[LossSums::kBehavKl] / n;
    st.is_weight_mean = s[LossSums::kIsSum] / n;
    st.is_weight_min = s[LossSums::kIsMin];
    st.is_weight_max = s[LossSums::kIsMax];
    st.ratio_mean = s[LossSums::kRatioSum] / n;
    st.ratio_min = s[LossSums::kRatioMin];
    st.ratio_max = s[LossSums::kRatioMax];
    st.lag_min = lag_min_;
    st.lag_max = lag_max_;
    st.lag_mean = lag_sum_ / n;
    // One pass whose proximal policy is the current one: the ratio is 1.
    st.epoch_clip_fraction = {st.clip_fraction};
    st.epoch_approx_kl = {s[LossSums::kProxKl] / n};
  }
  if (SkipOnAnyRank(!std::isfinite(st.loss) || !std::isfinite(norm))) {
    ++skipped_steps_;
    st.skipped = true;
    spdlog::warn(
        "learner: non-finite loss ({}) or gradient norm ({}) at version {}; "
        "optimizer step skipped, weights unchanged ({} skipped so far)",
        st.loss, norm, version_, skipped_steps_);
  } else {
    StepOptimizer();
    st.optimizer_steps = 1;
    FinishUpdate(&st);
  }
  st.lr = lr_;
  ClearKlProbe();
  ZeroGradients();
  st.version = version_;
  units_trained_ = 0;
  samples_trained_ = 0;
  lag_sum_ = 0;
  sums_ = LossSums();
  return st;
}

void LearnerCore::FinishUpdate(LearnerStepStats* st) {
  ++version_;
  ++steps_taken_;
  ExpireWaitingGroups();
  if (options_.target_kl > 0 && kl_log_probs_.defined()) {
    st->step_kl = MeasureStepKl();
    if (distributed() && group_error_.ok()) {
      // Every rank adapts the rate alike: the KL over the whole batch.
      at::Tensor kl = torch::full(
          {1}, st->step_kl,
          torch::TensorOptions(torch::kDouble).device(params_[0].device()));
      std::vector<at::Tensor> one = {kl};
      if (absl::Status s = reducer_->AllReduceMean(absl::MakeSpan(one));
          !s.ok()) {
        group_error_ = s;
      }
      st->step_kl = kl.item<double>();
    }
    // The critic warm-up moves only the value head: nothing to adapt to.
    if (steps_taken_ > options_.critic_warmup_steps)
      AdaptLearningRate(st->step_kl);
  }
}

void LearnerCore::ClearKlProbe() {
  kl_in_ = PolicyInput();
  kl_tokens_ = kl_mask_ = kl_log_probs_ = at::Tensor();
}

double LearnerCore::MeasureStepKl() {
  torch::NoGradGuard no_grad;
  EvalResult e = Evaluate(kl_in_, kl_tokens_);
  // k3 estimator of KL(before || after) on actions drawn from (about) the
  // policy before the step: r - 1 - log r >= 0, r = p_after / p_before.
  const at::Tensor log_r = (e.log_probs * kl_mask_).sum(1) - kl_log_probs_;
  return ((log_r.exp() - 1) - log_r).mean().item<double>();
}

void LearnerCore::AdaptLearningRate(double step_kl) {
  if (!std::isfinite(step_kl)) return;
  if (step_kl > 2 * options_.target_kl) {
    lr_ = std::max(options_.lr_min, lr_ / options_.lr_adapt_factor);
  } else if (step_kl < options_.target_kl / 2) {
    lr_ = std::min(options_.lr_max, lr_ * options_.lr_adapt_factor);
  }
  // Group 0 holds the weights (value head and temperatures keep their rates).
  static_cast<torch::optim::AdamWOptions&>(
      optimizer_->param_groups()[0].options())
      .lr(lr_);
}

std::vector<RolloutSegment*> LearnerCore::TakeConsumed() {
  std::vector<RolloutSegment*> out;
  out.swap(consumed_);
  return out;
}

std::shared_ptr<Policy> LearnerCore::MakeSnapshot() {
  std::shared_ptr<TrainablePolicy> s = policy_->Snapshot(version_);
  if (s->device() != options_.publish_device) s->To(options_.publish_device);
  return s;
}

}  // namespace rlvla3
