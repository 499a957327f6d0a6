// LearnerCore's construction and its update: the policy moves to the
// learner's device and the optimizer is built over it (ShardedOptimizer);
// TrainMicroBatch takes the next micro-batch of ready samples, evaluates the
// policy on it (under bf16 autocast when asked), computes the decoupled PPO
// loss and backpropagates it, summing the loss statistics as tensors; Step
// reads them once, clips the gradients and takes (or, non-finite, skips) one
// optimizer step; FinishUpdate advances the version and drives the KL-adaptive
// learning rate (kl_adaptive_lr.h). The multi-pass update is ppo_epochs.cc;
// staging learner_staging.cc; the samples SampleIntake, the gradients and
// the optimizer ShardedOptimizer.
#include "services/learner/learner_core.h"

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <cmath>
#include <sstream>

#include "absl/strings/str_cat.h"
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

SampleIntakeOptions IntakeOptions(const LearnerOptions& o) {
  SampleIntakeOptions i;
  i.grpo = o.algorithm == "grpo";
  i.gamma = o.gamma;
  i.gae_lambda = o.gae_lambda;
  i.global_units = o.global_units;
  i.max_policy_lag = o.max_policy_lag;
  i.grpo_group_size = o.grpo_group_size;
  i.train_decisions = o.train_decisions;
  i.max_train_decisions = o.max_train_decisions;
  i.seed = o.shuffle_seed + 1;
  i.grpo_std_floor = o.grpo_std_floor;
  i.lost_versions_after = o.lost_versions_after;
  i.lost_versions_before = o.lost_versions_before;
  return i;
}

ShardedOptimizerOptions OptimizerOptions(const LearnerOptions& o) {
  ShardedOptimizerOptions s;
  s.lr = o.lr;
  s.weight_decay = o.weight_decay;
  s.max_grad_norm = o.max_grad_norm;
  s.value_lr = o.value_lr;
  s.action_scale_lr = o.action_scale_lr;
  s.overlap_allreduce = o.overlap_allreduce;
  return s;
}

}  // namespace

LearnerCore::LearnerCore(std::shared_ptr<TrainablePolicy> policy,
                         at::Tensor text, at::Tensor text_len,
                         const LearnerOptions& options, uint64_t version,
                         GradientReducer* reducer)
    : policy_(std::move(policy)),
      text_(std::move(text)),
      text_len_(std::move(text_len)),
      options_(options),
      version_(version),
      intake_(IntakeOptions(options),
              [this](const std::vector<SampleRef>& slots,
                     std::vector<float>* values) {
                BootstrapValues(slots, values);
              }),
      rate_(RateOptions(options)),
      shuffle_rng_(options.shuffle_seed) {
  policy_->To(options_.device);
  policy_->SetTraining(true);
  if (options_.ref_kl_coef > 0) {
    reference_ = policy_->Snapshot(version);
    reference_->To(options_.device);
  }
  optimizer_ = std::make_unique<ShardedOptimizer>(
      *policy_, OptimizerOptions(options_), reducer);
}

LearnerCore::~LearnerCore() = default;

void LearnerCore::Add(const std::vector<RolloutSegment*>& segments) {
  intake_.Add(segments, version_);
}

bool LearnerCore::CanTrain() const {
  return intake_.ready_samples() > 0 && units_trained_ < options_.global_units;
}

bool LearnerCore::ShouldTrain() const {
  if (!CanTrain()) return false;
  return intake_.ready_samples() >= options_.micro_batch ||
         intake_.ready_units() >= options_.global_units - units_trained_;
}

bool LearnerCore::ReadyToStep() const {
  return units_trained_ >= options_.global_units;
}

std::vector<RolloutSegment*> LearnerCore::TakeConsumed() {
  return intake_.TakeConsumed();
}

absl::Status LearnerCore::SyncParameters() {
  return optimizer_->SyncParameters();
}

double LearnerCore::learning_rate() const { return rate_.lr(); }

absl::Status LearnerCore::SaveTrainingState(const std::string& dir) {
  std::ostringstream rng;
  rng << shuffle_rng_;
  return optimizer_->Save(dir, {version_, steps_taken_, rate_.lr(), rng.str()});
}

absl::Status LearnerCore::LoadTrainingState(const std::string& dir,
                                            uint64_t weights_version) {
  absl::StatusOr<LearnerTrainingState> s = optimizer_->Load(dir);
  if (!s.ok()) return s.status();
  if (s->version != weights_version) {
    return absl::FailedPreconditionError(
        absl::StrCat(dir, ": optimizer state of version ", s->version,
                     ", the policy's weights are version ", weights_version));
  }
  steps_taken_ = s->steps_taken;
  if (!s->rng.empty()) {
    std::istringstream rng(s->rng);
    rng >> shuffle_rng_;
  }
  rate_.set_lr(s->lr);
  optimizer_->SetWeightsLr(s->lr);
  return absl::OkStatus();
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
  PpoLossTerms terms = DecoupledPpoLoss(li, lo);
  terms.prox_kl_sum =
      ProxKlSum(steps, prox_steps, mb.mask, options_.per_step_ratio);
  terms.tokens = mb.mask.sum() * static_cast<double>(mb.tokens.size(-1));
  AddReferenceKl(mb, steps, &terms);
  return terms;
}

void LearnerCore::AddReferenceKl(const MicroBatch& mb, const at::Tensor& steps,
                                 PpoLossTerms* terms) {
  if (reference_ == nullptr) {
    terms->ref_kl_sum = torch::zeros({}, terms->loss.options());
    return;
  }
  at::Tensor ref;
  {
    torch::NoGradGuard no_grad;
    AutocastGuard autocast(options_.device, options_.bf16);
    ref = reference_->Evaluate(mb.in, mb.tokens).log_probs.to(torch::kFloat);
  }
  // k3 estimate of KL(theta || ref) on tokens theta sampled (about):
  // x = log ref - log theta; e^x - 1 - x >= 0, differentiable in theta.
  // (steps is masked already: x and k3 are 0 at steps not executed.)
  const at::Tensor x = ref * mb.mask - steps;
  const at::Tensor k3 = (x.exp() - 1) - x;  // [B, K]
  const double dims = static_cast<double>(mb.tokens.size(-1));
  const at::Tensor per_token = k3.sum(1) / (mb.mask.sum(1).clamp_min(1) * dims);
  terms->loss =
      terms->loss + options_.ref_kl_coef * (per_token * mb.weight).sum();
  terms->ref_kl_sum = k3.sum().detach();
}

void LearnerCore::TrainMicroBatch() {
  SampleIntake::MicroBatch taken = intake_.TakeMicroBatch(
      options_.micro_batch, options_.global_units - units_trained_);
  units_trained_ += taken.units;
  informative_units_ += taken.informative_units;
  const std::vector<SampleRef>& batch = taken.samples;
  if (batch.empty()) return;  // uninformative units only
  RecordLags(batch);
  samples_trained_ += static_cast<int64_t>(batch.size());
  if (multi_pass()) {
    // Trained at Step, after the whole global batch is here; the segments
    // stay with the learner until then.
    RecordProximal(batch);
    return;
  }
  MicroBatch mb = Prepare(batch);
  at::Tensor adv = mb.adv;
  if (options_.algorithm != "grpo" && options_.normalize_advantages) {
    adv = (adv - intake_.advantage_mean()) /
          (std::sqrt(intake_.advantage_var()) + 1e-8);
  }
  EvalResult e = Evaluate(mb.in, mb.tokens);
  PpoLossTerms terms = Loss(mb, e, at::Tensor(), adv);
  at::Tensor loss = terms.loss * loss_scale_;
  optimizer_->Backward(loss, units_trained_ >= options_.global_units);

  sums_.Add(terms, loss.detach());
  intake_.Trained(batch);
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
      r.max(),
      t.prox_kl_sum,
      t.tokens,
      t.ref_kl_sum};
  samples += r.size(0);
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
  if (!optimizer_->AnyOnAnyRank(samples_trained_ > 0,
                                /*if_failed=*/samples_trained_ > 0)) {
    AdvanceWithoutUpdate(&st);
    return st;
  }
  grad_scale_ = InformativeScale();
  // One host read per optimizer step: the gradient norm and, when anything
  // was trained, every loss statistic.
  const at::Tensor norm_t = optimizer_->ClipGradients(grad_scale_).reshape({1});
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
  if (optimizer_->AnyOnAnyRank(!std::isfinite(st.loss) ||
                               !std::isfinite(norm))) {
    ++skipped_steps_;
    st.skipped = true;
    // A failed agreement (a rank gone) is the group's error, said once by
    // the caller; the values here may be finite.
    if (group_status().ok()) {
      spdlog::warn(
          "learner: non-finite loss ({}) or gradient norm ({}) at version "
          "{}; optimizer step skipped, weights unchanged ({} skipped so far)",
          st.loss, norm, version_, skipped_steps_);
    }
  } else {
    optimizer_->Step();
    st.optimizer_steps = 1;
    FinishUpdate(&st);
  }
  st.lr = rate_.lr();
  rate_.ClearProbe();
  optimizer_->ZeroGradients();
  st.version = version_;
  ResetGlobalBatch();
  return st;
}

void LearnerCore::ResetGlobalBatch() {
  units_trained_ = informative_units_ = samples_trained_ = 0;
  refills_ = 0;
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
  intake_.TakeGroupCounts(&st->groups, &st->informative_groups);
}

double LearnerCore::InformativeScale() const {
  if (!options_.dynamic_sampling || informative_units_ <= 0) return 1.0;
  return static_cast<double>(options_.global_units) /
         static_cast<double>(informative_units_);
}

bool LearnerCore::JumpAbove(uint64_t held) {
  if (held < version_) return false;  // (held == version_: one up)
  intake_.LoseVersions(version_, held + 1);
  version_ = held + 1;
  intake_.Expire(version_);
  return true;
}

void LearnerCore::AdvanceWithoutUpdate(LearnerStepStats* st) {
  ++version_;
  intake_.Expire(version_);
  rate_.ClearProbe();
  st->lr = rate_.lr();
  st->version = version_;
  ResetGlobalBatch();
}

void LearnerCore::FinishUpdate(LearnerStepStats* st) {
  ++version_;
  ++steps_taken_;
  intake_.Expire(version_);
  if (rate_.has_probe()) {
    st->step_kl = MeasureStepKl();
    if (distributed()) {
      // Every rank adapts the rate alike: the KL over the whole batch.
      at::Tensor kl = torch::full(
          {1}, st->step_kl,
          torch::TensorOptions(torch::kDouble).device(optimizer_->device()));
      optimizer_->AllReduceMean(kl);
      st->step_kl = kl.item<double>();
    }
    // The critic warm-up moves only the value head: nothing to adapt to.
    if (steps_taken_ > options_.critic_warmup_steps)
      optimizer_->SetWeightsLr(rate_.Adapt(st->step_kl));
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
