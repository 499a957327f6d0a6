// LearnerCore's gradients, optimizer and saved training state. The AdamW is
// built over three parameter groups at their own rates (the weights, the
// value head, the action heads' log-temperatures), each holding only the
// parameters this rank owns (ZeRO-1, optimizer_shards.h). Backward can hand
// gradients to the reducer as autograd produces them (overlapped all-reduce);
// ClipGradients averages them over the ranks and clips their global norm;
// the ranks agree on skipping a non-finite step (SkipOnAnyRank); a step
// updates this rank's shard and gathers the others'. SyncParameters starts
// every rank from rank 0's weights, and Save/LoadTrainingState checkpoint the
// optimizer's shards with the version, step count and adapted learning rate.
#include <torch/torch.h>

#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "services/learner/adamw_step.h"
#include "services/learner/learner_core.h"
#include "services/learner/optimizer_shards.h"

namespace rlvla3 {

void LearnerCore::BuildOptimizer() {
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
  ZeroParameterGradients(params_);
}

void LearnerCore::StepOptimizer() {
  StepAdamW(*optimizer_);  // foreach lists (fused on a GPU with 2.1+)
  if (!distributed() || !group_error_.ok()) return;
  torch::NoGradGuard no_grad;
  if (absl::Status s = reducer_->GatherShards(absl::MakeSpan(params_), owners_);
      !s.ok()) {
    group_error_ = s;
  }
}

void LearnerCore::SetWeightsLr(double lr) {
  // Group 0 holds the weights (value head and temperatures keep their rates).
  static_cast<torch::optim::AdamWOptions&>(
      optimizer_->param_groups()[0].options())
      .lr(lr);
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
  std::vector<at::Tensor> grads;
  grads.reserve(params_.size());
  for (const auto& p : params_) {
    if (p.grad().defined()) grads.push_back(p.grad());
  }
  if (grads.empty()) {
    return torch::zeros(
        {}, torch::TensorOptions(torch::kDouble).device(options_.device));
  }
  // Dynamic sampling: a mean over the informative episodes (the loss
  // weights are 1 / global batch).
  if (grad_scale_ != 1.0) at::_foreach_mul_(grads, grad_scale_);
  const at::Tensor total = ClipGradNorm(grads, options_.max_grad_norm);
  return total.to(torch::kDouble);
}

absl::Status LearnerCore::SaveTrainingState(const std::string& dir) {
  const int rank = distributed() ? reducer_->rank() : 0;
  const int world = distributed() ? reducer_->world_size() : 1;
  std::ostringstream rng;
  rng << shuffle_rng_;
  absl::Status s =
      SaveOptimizerShard(dir, *optimizer_, params_, owners_, rank, world,
                         {version_, steps_taken_, rate_.lr(), rng.str()});
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

double LearnerCore::learning_rate() const { return rate_.lr(); }

absl::Status LearnerCore::LoadTrainingState(const std::string& dir,
                                            uint64_t weights_version) {
  const int rank = distributed() ? reducer_->rank() : 0;
  absl::StatusOr<LearnerTrainingState> s =
      LoadOptimizerShards(dir, *optimizer_, params_, owners_, rank);
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
  SetWeightsLr(s->lr);
  return absl::OkStatus();
}

}  // namespace rlvla3
