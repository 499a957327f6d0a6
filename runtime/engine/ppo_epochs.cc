// LearnerCore's multi-pass PPO update (LearnerOptions::ppo_epochs and
// ::minibatches): samples are collected with their proximal log-probs as
// they arrive (RecordProximal); once the global batch is complete, StepEpochs
// trains it for E epochs of M shuffled minibatches, one optimizer step per
// minibatch, and the policy version advances once.
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "runtime/engine/learner.h"

namespace rlvla3 {

void LearnerCore::RecordProximal(const std::vector<SampleRef>& batch) {
  torch::NoGradGuard no_grad;
  MicroBatch mb = Prepare(batch);
  const at::Tensor prox =
      (policy_->Evaluate(mb.in, mb.tokens).log_probs * mb.mask)
          .sum(1)
          .to(torch::kCPU)
          .contiguous();
  const float* p = prox.data_ptr<float>();
  batch_.insert(batch_.end(), batch.begin(), batch.end());
  batch_prox_.insert(batch_prox_.end(), p, p + batch.size());
}

LearnerStepStats LearnerCore::StepEpochs() {
  LearnerStepStats st;
  const int64_t n = static_cast<int64_t>(batch_.size());
  st.samples = n;
  st.lag_min = lag_min_;
  st.lag_max = lag_max_;
  st.lag_mean = n > 0 ? lag_sum_ / static_cast<double>(n) : 0;
  const int epochs = options_.ppo_epochs;
  const int minibatches =
      static_cast<int>(std::min<int64_t>(options_.minibatches, n));
  // PPO advantages normalised over the whole global batch: the same numbers
  // whatever order and grouping the samples arrived in.
  double adv_mean = 0, adv_std = 1;
  if (options_.algorithm != "grpo" && options_.normalize_advantages && n > 0) {
    double sum = 0, sq = 0;
    for (const SampleRef& r : batch_) {
      const double a = r.seg->advantages[r.t];
      sum += a;
      sq += a * a;
    }
    adv_mean = sum / static_cast<double>(n);
    adv_std = std::sqrt(
        std::max(0.0, sq / static_cast<double>(n) - adv_mean * adv_mean));
  }
  const at::Tensor prox_all = torch::from_blob(
      batch_prox_.data(), {n}, torch::kFloat);  // lives until the end

  // Per-epoch statistics stay tensors until one host read at the end.
  std::vector<at::Tensor> epoch_clipped, epoch_kl;
  at::Tensor sum_loss, sum_policy, sum_value, sum_entropy, sum_is, min_is,
      max_is, sum_ratio, min_ratio, max_ratio;
  auto acc = [](at::Tensor& into, const at::Tensor& v) {
    into = into.defined() ? into + v : v;
  };
  auto keep_min = [](at::Tensor& into, const at::Tensor& v) {
    into = into.defined() ? torch::min(into, v) : v;
  };
  auto keep_max = [](at::Tensor& into, const at::Tensor& v) {
    into = into.defined() ? torch::max(into, v) : v;
  };
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  bool aborted = false;
  double last_norm = 0;
  for (int epoch = 0; epoch < epochs && !aborted; ++epoch) {
    std::shuffle(order.begin(), order.end(), shuffle_rng_);
    at::Tensor clipped = torch::zeros({}), kl = torch::zeros({});
    for (int m = 0; m < minibatches && !aborted; ++m) {
      const int64_t lo = n * m / minibatches, hi = n * (m + 1) / minibatches;
      at::Tensor mb_loss = torch::zeros({});
      for (int64_t i = lo; i < hi; i += options_.micro_batch) {
        const int64_t j = std::min<int64_t>(hi, i + options_.micro_batch);
        std::vector<SampleRef> refs;
        std::vector<int64_t> idx(order.begin() + i, order.begin() + j);
        for (int64_t k : idx) refs.push_back(batch_[static_cast<size_t>(k)]);
        MicroBatch mb = Prepare(refs);
        // A sample's weight is 1 / global batch: scaled so that each
        // minibatch's gradient is a mean over that minibatch.
        mb.weight = mb.weight * static_cast<float>(minibatches);
        at::Tensor adv = mb.adv;
        if (options_.algorithm != "grpo" && options_.normalize_advantages)
          adv = (adv - adv_mean) / (adv_std + 1e-8);
        const at::Tensor prox =
            prox_all.index_select(0, torch::tensor(idx, torch::kLong));
        EvalResult e = policy_->Evaluate(mb.in, mb.tokens);
        PpoLossTerms terms = Loss(mb, e, prox, adv);
        const at::Tensor loss = terms.loss * loss_scale_;
        loss.backward();
        acc(mb_loss, loss.detach());
        acc(sum_policy, terms.policy_loss);
        acc(sum_value, terms.value_loss);
        acc(sum_entropy, terms.entropy);
        acc(sum_is, terms.is_weight.sum());
        keep_min(min_is, terms.is_weight.min());
        keep_max(max_is, terms.is_weight.max());
        acc(sum_ratio, terms.ratio.sum());
        keep_min(min_ratio, terms.ratio.min());
        keep_max(max_ratio, terms.ratio.max());
        clipped = clipped + terms.clipped.sum();
        // k3 estimator of KL(prox || theta) per decision: r - 1 - log r.
        kl = kl + ((terms.ratio - 1) - terms.ratio.log()).sum();
      }
      acc(sum_loss, mb_loss);
      // One host read per minibatch step: the loss and the norm decide it.
      const double norm = ClipGradients();
      const double loss_value = mb_loss.item<double>();
      last_norm = norm;
      if (!std::isfinite(loss_value) || !std::isfinite(norm)) {
        aborted = true;
        break;
      }
      optimizer_->step();
      optimizer_->zero_grad();
      ++st.optimizer_steps;
    }
    epoch_clipped.push_back(clipped);
    epoch_kl.push_back(kl);
  }
  optimizer_->zero_grad();
  st.grad_norm = last_norm;
  const double trained =
      static_cast<double>(n * static_cast<int64_t>(epoch_clipped.size()));
  if (trained > 0) {
    const double passes = static_cast<double>(minibatches) *
                          static_cast<double>(epoch_clipped.size());
    at::Tensor all =
        torch::cat(
            {torch::stack({sum_loss, sum_policy, sum_value, sum_entropy, sum_is,
                           min_is, max_is, sum_ratio, min_ratio, max_ratio}),
             torch::stack(epoch_clipped), torch::stack(epoch_kl)})
            .to(torch::kDouble)
            .contiguous();
    const double* v = all.data_ptr<double>();
    st.loss = v[0] / passes;
    st.policy_loss = v[1] / passes;
    st.value_loss = v[2] / passes;
    st.entropy = v[3] / passes;
    st.is_weight_mean = v[4] / trained;
    st.is_weight_min = v[5];
    st.is_weight_max = v[6];
    st.ratio_mean = v[7] / trained;
    st.ratio_min = v[8];
    st.ratio_max = v[9];
    const size_t e = epoch_clipped.size();
    double clipped_all = 0, kl_all = 0;
    for (size_t k = 0; k < e; ++k) {
      st.epoch_clip_fraction.push_back(v[10 + k] / static_cast<double>(n));
      st.epoch_approx_kl.push_back(v[10 + e + k] / static_cast<double>(n));
      clipped_all += v[10 + k];
      kl_all += v[10 + e + k];
    }
    st.clip_fraction = clipped_all / trained;
    st.approx_kl = kl_all / trained;
  }
  if (aborted && st.optimizer_steps == 0) {
    ++skipped_steps_;
    st.skipped = true;
    spdlog::warn(
        "learner: non-finite loss or gradient norm ({}) at version {}; "
        "update skipped, weights unchanged ({} skipped so far)",
        last_norm, version_, skipped_steps_);
  } else {
    if (aborted) {
      spdlog::warn(
          "learner: non-finite loss or gradient norm after {} minibatch "
          "steps at version {}; the rest of this update is skipped",
          st.optimizer_steps, version_);
    }
    FinishUpdate(&st);
  }
  st.lr = lr_;
  st.version = version_;
  ClearKlProbe();
  for (const SampleRef& r : batch_) {
    if (--r.seg->unconsumed == 0) consumed_.push_back(r.seg);
  }
  batch_.clear();
  batch_prox_.clear();
  units_trained_ = 0;
  samples_trained_ = 0;
  lag_sum_ = 0;
  return st;
}

}  // namespace rlvla3
