// LearnerCore's multi-pass PPO update (LearnerOptions::ppo_epochs and
// ::minibatches): samples are collected with their proximal log-probs as
// they arrive (RecordProximal); once the global batch is complete, StepEpochs
// trains it for E epochs of M shuffled minibatches, one optimizer step per
// minibatch, and the policy version advances once. Its phases: PlanEpochs
// (the minibatch count the ranks agree on, the global batch's advantage
// moments), TrainEpochs / TrainMinibatch (the steps; a non-finite one ends
// the update; with kl_stop, KlStops reads each minibatch's first
// micro-batch's KL from its forward, before its backward is paid for),
// SummarizeEpochs (one host read of every epoch's statistics) and EndEpochs
// (skip or finish the update, hand the segments back).
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "policies/device.h"
#include "services/learner/learner_core.h"

namespace rlvla3 {

void LearnerCore::RecordProximal(const std::vector<SampleRef>& batch) {
  torch::NoGradGuard no_grad;
  MicroBatch mb = Prepare(batch);
  // Stays where it was computed: no host read while samples stream in.
  // Per executed step [B, K] (Loss sums them for a per-decision ratio).
  batch_prox_.push_back(Evaluate(mb.in, mb.tokens).log_probs * mb.mask);
  batch_.insert(batch_.end(), batch.begin(), batch.end());
}

LearnerStepStats LearnerCore::StepEpochs() {
  LearnerStepStats st;
  const int64_t n = static_cast<int64_t>(batch_.size());
  st.samples = n;
  st.lag_min = lag_min_;
  st.lag_max = lag_max_;
  st.lag_mean = n > 0 ? lag_sum_ / static_cast<double>(n) : 0;
  TakeGroupCounts(&st);
  if (ShouldRefill()) {
    CarryOver(&st);
    return st;
  }
  if (!optimizer_->AnyOnAnyRank(n > 0, /*if_failed=*/n > 0)) {
    AdvanceWithoutUpdate(&st);
    return st;
  }
  grad_scale_ = InformativeScale();
  const EpochPlan plan = PlanEpochs(n);
  std::vector<LossSums> epoch_sums;  // read once, at the end
  const bool completed = TrainEpochs(plan, &epoch_sums, &st);
  optimizer_->ZeroGradients();
  SummarizeEpochs(epoch_sums, n, plan.minibatches, &st);
  ScaleLossStats(&st);
  EndEpochs(completed, &st);
  return st;
}

bool LearnerCore::ShouldRefill() {
  if (options_.algorithm != "grpo" || options_.min_informative_groups <= 0 ||
      refills_ >= options_.refill_max_rounds) {
    return false;
  }
  const int64_t wanted = static_cast<int64_t>(options_.min_informative_groups) *
                         options_.grpo_group_size;
  // Data-parallel: every rank carries over when any is short, so that all
  // take the same steps.
  return optimizer_->AnyOnAnyRank(informative_units_ < wanted);
}

void LearnerCore::CarryOver(LearnerStepStats* st) {
  ++version_;
  ++refills_;
  intake_.Expire(version_);
  rate_.ClearProbe();
  st->deferred = true;
  st->samples = 0;
  st->lr = rate_.lr();
  st->version = version_;
  // batch_, batch_prox_, informative_units_ and the lag figures stay: the
  // weights they were recorded with are still the current ones.
  units_trained_ = 0;
}

LearnerCore::EpochPlan LearnerCore::PlanEpochs(int64_t n) {
  EpochPlan plan;
  plan.minibatches =
      static_cast<int>(std::min<int64_t>(options_.minibatches, n));
  if (distributed() && optimizer_->status().ok()) {
    // Every rank must take as many optimizer steps (GRPO shares differ in
    // samples): one minibatch on every rank when any has too few samples.
    plan.minibatches = optimizer_->AnyOnAnyRank(n < options_.minibatches)
                           ? 1
                           : options_.minibatches;
  }
  // PPO advantages normalised over the whole global batch: the same numbers
  // whatever order and grouping the samples arrived in.
  // (Every rank takes part in the moments' all-reduce, whatever its n.)
  if (options_.algorithm != "grpo" && options_.normalize_advantages &&
      (n > 0 || distributed())) {
    GlobalAdvantageMoments(n, &plan);
  }
  plan.prox = torch::cat(batch_prox_);
  return plan;
}

void LearnerCore::GlobalAdvantageMoments(int64_t n, EpochPlan* plan) {
  double sum = 0, sq = 0;
  for (const SampleRef& r : batch_) {
    const double a = r.seg->advantages[r.t];
    sum += a;
    sq += a * a;
  }
  double count = static_cast<double>(n);
  if (distributed() && optimizer_->status().ok()) {
    // Data-parallel: the moments of the whole global batch, every rank's
    // samples (the means of the ranks' sums keep their ratios).
    at::Tensor m = HostValuesToDevice(std::vector<double>{sum, sq, count},
                                      optimizer_->device());
    optimizer_->AllReduceMean(m);
    const at::Tensor host = m.cpu();
    sum = host[0].item<double>();
    sq = host[1].item<double>();
    count = host[2].item<double>();
  }
  if (count > 0) {
    plan->adv_mean = sum / count;
    plan->adv_std =
        std::sqrt(std::max(0.0, sq / count - plan->adv_mean * plan->adv_mean));
  }
}

bool LearnerCore::TrainEpochs(const EpochPlan& plan,
                              std::vector<LossSums>* epoch_sums,
                              LearnerStepStats* st) {
  const int64_t n = static_cast<int64_t>(batch_.size());
  const int minibatches = plan.minibatches;
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  for (int epoch = 0; epoch < options_.ppo_epochs; ++epoch) {
    std::shuffle(order.begin(), order.end(), shuffle_rng_);
    LossSums& sums = epoch_sums->emplace_back();
    for (int m = 0; m < minibatches; ++m) {
      const int64_t lo = n * m / minibatches, hi = n * (m + 1) / minibatches;
      const at::Tensor mb = TrainMinibatch(plan, order, lo, hi, &sums, st);
      if (st->kl_stopped) {
        // The policy moved far enough from the proximal one: this
        // minibatch's step and the rest of the update are skipped (as
        // Stable-Baselines' PPO target_kl), its backward never run.
        optimizer_->ZeroGradients();
        return true;
      }
      // One host read per minibatch step: its loss and gradient norm decide
      // whether the step is taken.
      const at::Tensor check =
          torch::cat({mb.to(torch::kDouble),
                      optimizer_->ClipGradients(grad_scale_).reshape({1})})
              .to(torch::kCPU)
              .contiguous();
      const double* c = check.data_ptr<double>();
      st->grad_norm = c[3];
      if (optimizer_->AnyOnAnyRank(!std::isfinite(c[0]) ||
                                   !std::isfinite(st->grad_norm))) {
        return false;
      }
      optimizer_->Step();
      optimizer_->ZeroGradients();
      ++st->optimizer_steps;
    }
  }
  return true;
}

bool LearnerCore::KlStops(const PpoLossTerms& first) {
  // The first micro-batch's KL per token, from its forward, before its
  // backward: one host read. Every rank asks, whatever it holds.
  double token_kl = 0;
  if (first.prox_kl_sum.defined()) {
    const at::Tensor f = torch::stack({first.prox_kl_sum, first.tokens})
                             .to(torch::kDouble)
                             .to(torch::kCPU)
                             .contiguous();
    const double* c = f.data_ptr<double>();
    token_kl = c[1] > 0 ? c[0] / c[1] : 0;
  }
  return optimizer_->AnyOnAnyRank(token_kl > options_.kl_stop);
}

at::Tensor LearnerCore::TrainMinibatch(const EpochPlan& plan,
                                       const std::vector<int64_t>& order,
                                       int64_t lo, int64_t hi, LossSums* sums,
                                       LearnerStepStats* st) {
  at::Tensor mb_loss =
      torch::zeros({}, torch::TensorOptions().device(options_.device));
  at::Tensor kl_sum = torch::zeros_like(mb_loss), tokens = kl_sum;
  std::vector<int64_t> idx;
  std::vector<SampleRef> refs;
  idx.reserve(static_cast<size_t>(options_.micro_batch));
  refs.reserve(static_cast<size_t>(options_.micro_batch));
  if (lo == hi && options_.kl_stop > 0 && KlStops(PpoLossTerms{})) {
    st->kl_stopped = true;  // another rank's minibatch moved too far
  }
  for (int64_t i = lo; i < hi; i += options_.micro_batch) {
    const int64_t j = std::min<int64_t>(hi, i + options_.micro_batch);
    idx.assign(order.begin() + i, order.begin() + j);
    refs.clear();
    for (int64_t k : idx) refs.push_back(batch_[static_cast<size_t>(k)]);
    MicroBatch mb = Prepare(refs);
    // A sample's weight is 1 / global batch: scaled so that each
    // minibatch's gradient is a mean over that minibatch.
    mb.weight = mb.weight * static_cast<float>(plan.minibatches);
    at::Tensor adv = mb.adv;
    if (options_.algorithm != "grpo" && options_.normalize_advantages)
      adv = (adv - plan.adv_mean) / (plan.adv_std + 1e-8);
    const at::Tensor prox =
        plan.prox.index_select(0, HostValuesToDevice(idx, plan.prox.device()));
    EvalResult e = Evaluate(mb.in, mb.tokens);
    PpoLossTerms terms = Loss(mb, e, prox, adv);
    const at::Tensor loss = terms.loss * loss_scale_;
    mb_loss = mb_loss + loss.detach();
    kl_sum = kl_sum + terms.prox_kl_sum;
    tokens = tokens + terms.tokens;
    sums->Add(terms, loss.detach());
    if (i == lo && options_.kl_stop > 0 && KlStops(terms)) {
      st->kl_stopped = true;  // its figures count; its backward is not run
      break;
    }
    optimizer_->Backward(loss, /*last_of_step=*/j == hi);
    ++st->backward_passes;
  }
  return torch::stack({mb_loss, kl_sum, tokens});
}

void LearnerCore::SummarizeEpochs(const std::vector<LossSums>& epoch_sums,
                                  int64_t n, int minibatches,
                                  LearnerStepStats* st) {
  if (n <= 0 || epoch_sums.empty()) return;
  std::vector<at::Tensor> packed;
  std::vector<double> samples;  // per epoch: fewer in one kl_stop ended
  for (const LossSums& s : epoch_sums) {
    if (s.empty()) continue;
    packed.push_back(s.Pack());
    samples.push_back(static_cast<double>(s.samples));
  }
  const at::Tensor all =
      torch::stack(packed).to(torch::kCPU).contiguous();  // [epochs, fields]
  const double* v = all.data_ptr<double>();
  const double trained = std::accumulate(samples.begin(), samples.end(), 0.0);
  const double passes =
      static_cast<double>(minibatches) * static_cast<double>(packed.size());
  double total[LossSums::kFields] = {};
  double total_token_kl = 0;
  st->is_weight_min = st->ratio_min = std::numeric_limits<double>::infinity();
  st->is_weight_max = st->ratio_max = -std::numeric_limits<double>::infinity();
  for (size_t k = 0; k < packed.size(); ++k) {
    const double* e = v + k * LossSums::kFields;
    const double per_epoch = std::max(1.0, samples[k]);
    for (int f = 0; f < LossSums::kFields; ++f) total[f] += e[f];
    st->is_weight_min = std::min(st->is_weight_min, e[LossSums::kIsMin]);
    st->is_weight_max = std::max(st->is_weight_max, e[LossSums::kIsMax]);
    st->ratio_min = std::min(st->ratio_min, e[LossSums::kRatioMin]);
    st->ratio_max = std::max(st->ratio_max, e[LossSums::kRatioMax]);
    st->epoch_clip_fraction.push_back(e[LossSums::kClipped] / per_epoch);
    st->epoch_approx_kl.push_back(e[LossSums::kProxKl] / per_epoch);
    const double tokens = e[LossSums::kTokens];
    st->epoch_token_kl.push_back(tokens > 0 ? e[LossSums::kProxKlSum] / tokens
                                            : 0);
    total_token_kl += st->epoch_token_kl.back();
  }
  st->token_kl = total_token_kl / static_cast<double>(packed.size());
  const double tokens = total[LossSums::kTokens];
  st->ref_kl = tokens > 0 ? total[LossSums::kRefKl] / tokens : 0;
  st->loss = total[LossSums::kLoss] / passes;
  st->policy_loss = total[LossSums::kPolicy] / passes;
  st->value_loss = total[LossSums::kValue] / passes;
  st->entropy = total[LossSums::kEntropy] / passes;
  st->is_weight_mean = total[LossSums::kIsSum] / trained;
  st->ratio_mean = total[LossSums::kRatioSum] / trained;
  st->clip_fraction = total[LossSums::kClipped] / trained;
  st->approx_kl = total[LossSums::kProxKl] / trained;
}

void LearnerCore::EndEpochs(bool completed, LearnerStepStats* st) {
  if (!completed && st->optimizer_steps == 0) {
    ++skipped_steps_;
    st->skipped = true;
    if (group_status().ok()) {  // else the group's error, said by the caller
      spdlog::warn(
          "learner: non-finite loss or gradient norm ({}) at version {}; "
          "update skipped, weights unchanged ({} skipped so far)",
          st->grad_norm, version_, skipped_steps_);
    }
  } else {
    if (!completed && group_status().ok()) {
      spdlog::warn(
          "learner: non-finite loss or gradient norm after {} minibatch "
          "steps at version {}; the rest of this update is skipped",
          st->optimizer_steps, version_);
    }
    FinishUpdate(st);
  }
  st->lr = rate_.lr();
  st->version = version_;
  rate_.ClearProbe();
  intake_.Trained(batch_);
  ResetGlobalBatch();
}

}  // namespace rlvla3
