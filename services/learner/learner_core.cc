// LearnerCore's construction and its update: the policy moves to the
// learner's device and the optimizer is built over it (learner_optimizer.cc);
// TrainMicroBatch takes the next micro-batch of ready samples, evaluates the
// policy on it (under bf16 autocast when asked), computes the decoupled PPO
// loss and backpropagates it, summing the loss statistics as tensors; Step
// reads them once, clips the gradients and takes (or, non-finite, skips) one
// optimizer step; FinishUpdate advances the version and drives the KL-adaptive
// learning rate (kl_adaptive_lr.h). The multi-pass update is ppo_epochs.cc;
// sample intake and staging learner_intake.cc.
#include "services/learner/learner_core.h"

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <cmath>

#include "policies/device.h"

namespace rlvla3 {
namespace {

KlAdaptiveLrOptions RateOptions(const LearnerOptions& o) {
  KlAdaptiveLrOptions r;
  r.lr = o.lr;
  r.target_kl = o.target_kl;
  r.lr_min = o.lr_min;
  r.lr_max = o.lr_max;
  r.factor = o.lr_adapt_factor;
  return r;
}

}  // namespace

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
      rate_(RateOptions(options)),
      shuffle_rng_(options.shuffle_seed) {
  policy_->To(options_.device);
  policy_->SetTraining(true);
  BuildOptimizer();
}

LearnerCore::~LearnerCore() = default;

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

PpoLossTerms LearnerCore::Loss(const MicroBatch& mb, const EvalResult& e,
                               const at::Tensor& prox, const at::Tensor& adv) {
  PpoLossInput li;
  const at::Tensor steps = e.log_probs * mb.mask;  // [B, K]
  // `prox` (multi-pass) is per step; one pass: the current policy's.
  const at::Tensor prox_steps = prox.defined() ? prox : steps.detach();
  if (options_.per_step_ratio) {
    li.mask = mb.mask;
    li.log_probs = steps;
    li.prox_log_probs = prox_steps;
    li.behav_log_probs = mb.behav_steps;
  } else {
    li.log_probs = steps.sum(1);
    li.prox_log_probs = prox_steps.sum(1);
    li.behav_log_probs = mb.behav;
  }
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
  rate_.Record(mb.in, mb.tokens, mb.mask, prox_steps.sum(1));
  return DecoupledPpoLoss(li, lo);
}

void LearnerCore::TrainMicroBatch() {
  std::vector<SampleRef> batch;
  int64_t units = units_trained_;
  while (!ready_.empty() &&
         static_cast<int>(batch.size()) < options_.micro_batch &&
         units < options_.global_units) {
    const SampleRef r = ready_.front();
    ready_.pop_front();
    if (r.unit_end) {
      ++units;
      --ready_unit_count_;
      if (r.seg != nullptr) ++informative_units_;
    }
    if (r.seg != nullptr) batch.push_back(r);
  }
  if (batch.empty()) {
    units_trained_ = units;  // uninformative units only
    return;
  }
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

LearnerStepStats LearnerCore::Step() {
  if (multi_pass()) return StepEpochs();
  LearnerStepStats st;
  st.samples = samples_trained_;
  TakeGroupCounts(&st);
  if (!AnyTrainedOnAnyRank(samples_trained_ > 0)) {
    AdvanceWithoutUpdate(&st);
    return st;
  }
  grad_scale_ = InformativeScale();
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
    ScaleLossStats(&st);
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
  st.lr = rate_.lr();
  rate_.ClearProbe();
  ZeroGradients();
  st.version = version_;
  ResetGlobalBatch();
  return st;
}

void LearnerCore::ResetGlobalBatch() {
  units_trained_ = informative_units_ = samples_trained_ = 0;
  grad_scale_ = 1.0;
  lag_sum_ = 0;
  sums_ = LossSums();
  batch_.clear();
  batch_prox_.clear();
}

void LearnerCore::ScaleLossStats(LearnerStepStats* st) const {
  // The loss weights sum to the informative share of the batch; the
  // gradient is rescaled (ClipGradients), and so are the means reported.
  st->loss *= grad_scale_;
  st->policy_loss *= grad_scale_;
  st->value_loss *= grad_scale_;
  st->entropy *= grad_scale_;
}

void LearnerCore::TakeGroupCounts(LearnerStepStats* st) {
  st->groups = groups_done_;
  st->informative_groups = groups_informative_;
  groups_done_ = groups_informative_ = 0;
}

bool LearnerCore::AnyTrainedOnAnyRank(bool local) {
  if (!distributed() || !group_error_.ok()) return local;
  absl::StatusOr<bool> any = reducer_->AnyOf(local);
  if (!any.ok()) {
    group_error_ = any.status();
    return local;
  }
  return *any;
}

double LearnerCore::InformativeScale() const {
  if (!options_.dynamic_sampling || informative_units_ <= 0) return 1.0;
  return static_cast<double>(options_.global_units) /
         static_cast<double>(informative_units_);
}

void LearnerCore::AdvanceWithoutUpdate(LearnerStepStats* st) {
  ++version_;
  ExpireWaitingGroups();
  rate_.ClearProbe();
  st->lr = rate_.lr();
  st->version = version_;
  ResetGlobalBatch();
}

void LearnerCore::FinishUpdate(LearnerStepStats* st) {
  ++version_;
  ++steps_taken_;
  ExpireWaitingGroups();
  if (rate_.has_probe()) {
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
      SetWeightsLr(rate_.Adapt(st->step_kl));
  }
}

double LearnerCore::MeasureStepKl() {
  torch::NoGradGuard no_grad;
  const EvalResult e = Evaluate(rate_.probe_input(), rate_.probe_tokens());
  return rate_.StepKl(e.log_probs);
}

std::shared_ptr<Policy> LearnerCore::MakeSnapshot() {
  std::shared_ptr<TrainablePolicy> s = policy_->Snapshot(version_);
  if (s->device() != options_.publish_device) s->To(options_.publish_device);
  return s;
}

}  // namespace rlvla3
