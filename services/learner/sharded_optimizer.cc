#include "services/learner/sharded_optimizer.h"

#include <torch/torch.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "services/learner/adamw_step.h"

namespace rlvla3 {

ShardedOptimizer::ShardedOptimizer(TrainablePolicy& policy,
                                   const ShardedOptimizerOptions& options,
                                   GradientReducer* reducer)
    : options_(options), reducer_(reducer) {
  Build(policy);
}

ShardedOptimizer::~ShardedOptimizer() = default;

void ShardedOptimizer::Build(TrainablePolicy& policy) {
  // Three parameter groups, each at its own rate: the value head (fit from
  // scratch after SFT, on stopped-gradient features), the action heads'
  // log-temperatures (one scalar per action dimension: like a Gaussian
  // policy's log-std, it needs a far larger step than the weights to move
  // within a run) and everything else.
  TrainablePolicy::ParameterGroups g = policy.Parameters();
  const double rates[] = {options_.lr, options_.value_lr,
                          options_.action_scale_lr};
  int k = 0;
  for (auto* group : {&g.weights, &g.value, &g.action_scale}) {
    params_.insert(params_.end(), group->begin(), group->end());
    frozen_.insert(frozen_.end(), group->size(), rates[k++] == 0.0);
  }
  // ZeRO-1: this rank's optimizer holds only the parameters it owns.
  std::vector<int64_t> numels;
  for (const at::Tensor& p : params_) numels.push_back(p.numel());
  owners_ = AssignShardOwners(numels, world_size());
  size_t index = 0;
  for (auto* group : {&g.weights, &g.value, &g.action_scale}) {
    std::vector<at::Tensor> owned;
    for (const at::Tensor& p : *group) {
      if (owners_[index++] == rank()) owned.push_back(p);
    }
    group->swap(owned);
  }
  const auto group_options = [](double lr, double weight_decay) {
    return std::make_unique<torch::optim::AdamWOptions>(
        torch::optim::AdamWOptions(lr).weight_decay(weight_decay));
  };
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(g.weights,
                      group_options(options_.lr, options_.weight_decay));
  groups.emplace_back(g.value,
                      group_options(options_.value_lr, options_.weight_decay));
  // A temperature has no scale to decay towards: no weight decay.
  if (!g.action_scale.empty()) {
    groups.emplace_back(g.action_scale,
                        group_options(options_.action_scale_lr, 0.0));
  }
  optimizer_ = std::make_unique<torch::optim::AdamW>(
      groups, torch::optim::AdamWOptions(options_.lr)
                  .weight_decay(options_.weight_decay));
}

at::Device ShardedOptimizer::device() const {
  return params_.empty() ? at::Device(at::kCPU) : params_[0].device();
}

void ShardedOptimizer::Backward(const at::Tensor& loss, bool last_of_step) {
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

void ShardedOptimizer::ZeroGradients() {
  // Every parameter's, not only the optimizer's: with ZeRO-1 it holds this
  // rank's shard, and the others' gradients must not accumulate either.
  ZeroParameterGradients(params_);
}

void ShardedOptimizer::Step() {
  StepAdamW(*optimizer_);  // foreach lists (fused on a GPU with 2.1+)
  if (!distributed() || !group_error_.ok()) return;
  torch::NoGradGuard no_grad;
  if (absl::Status s = reducer_->GatherShards(absl::MakeSpan(params_), owners_);
      !s.ok()) {
    group_error_ = s;
  }
}

void ShardedOptimizer::SetWeightsLr(double lr) {
  // Group 0 holds the weights (value head and temperatures keep their rates).
  static_cast<torch::optim::AdamWOptions&>(
      optimizer_->param_groups()[0].options())
      .lr(lr);
}

absl::Status ShardedOptimizer::SyncParameters() {
  if (!distributed()) return absl::OkStatus();
  torch::NoGradGuard no_grad;
  absl::Status s = reducer_->Broadcast(absl::MakeSpan(params_), 0);
  if (!s.ok() && group_error_.ok()) group_error_ = s;
  return s;
}

bool ShardedOptimizer::AnyOnAnyRank(bool local, bool if_failed) {
  if (!distributed()) return local;
  if (!group_error_.ok()) return if_failed;
  absl::StatusOr<bool> any = reducer_->AnyOf(local);
  if (!any.ok()) {
    group_error_ = any.status();
    return if_failed;
  }
  return *any;
}

void ShardedOptimizer::AllReduceMean(at::Tensor values) {
  if (!distributed() || !group_error_.ok()) return;
  std::vector<at::Tensor> one = {std::move(values)};
  if (absl::Status s = reducer_->AllReduceMean(absl::MakeSpan(one)); !s.ok()) {
    group_error_ = s;
  }
}

at::Tensor ShardedOptimizer::ClipGradients(double scale) {
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
  for (size_t i = 0; i < params_.size(); ++i) {
    if (params_[i].grad().defined() && !frozen_[i])
      grads.push_back(params_[i].grad());
  }
  if (grads.empty()) {
    return torch::zeros({},
                        torch::TensorOptions(torch::kDouble).device(device()));
  }
  if (scale != 1.0) at::_foreach_mul_(grads, scale);
  const at::Tensor total = ClipGradNorm(grads, options_.max_grad_norm);
  return total.to(torch::kDouble);
}

absl::Status ShardedOptimizer::Save(const std::string& dir,
                                    const LearnerTrainingState& state) {
  absl::Status s = SaveOptimizerShard(dir, *optimizer_, params_, owners_,
                                      rank(), world_size(), state);
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
  return rank() == 0 ? MarkOptimizerShardsComplete(dir, world_size())
                     : absl::OkStatus();
}

absl::StatusOr<LearnerTrainingState> ShardedOptimizer::Load(
    const std::string& dir) {
  return LoadOptimizerShards(dir, *optimizer_, params_, owners_, rank());
}

}  // namespace rlvla3
