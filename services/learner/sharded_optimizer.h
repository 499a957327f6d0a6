// File: services/learner/sharded_optimizer.h
// -----------------------------------------------------------------------------
// ShardedOptimizer: a policy's gradients and its AdamW, alone or as one rank
// of a data-parallel learner. The AdamW has three parameter groups at their
// own rates (the weights, the value head, the action heads' log-
// temperatures), each holding only the parameters this rank owns (ZeRO-1,
// optimizer_shards.h). Backward can hand gradients to the reducer as
// autograd produces them (overlapped all-reduce); ClipGradients averages them
// over the ranks and clips their global norm; the ranks agree on skipping a
// non-finite step (AnyOnAnyRank); Step updates this rank's shard and gathers
// the others'. SyncParameters starts every rank from rank 0's weights;
// Save/Load checkpoint this rank's optimizer shard with the learner's state.
// The first failed collective is kept (status()): the group cannot go on,
// and no collective is tried after it.
//
// Example:
//   ShardedOptimizer opt(policy, options, reducer);   // reducer may be null
//   opt.Backward(loss, /*last_of_step=*/true);
//   at::Tensor norm = opt.ClipGradients(/*scale=*/1.0);
//   if (!opt.AnyOnAnyRank(!finite)) opt.Step();
//   opt.ZeroGradients();
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_LEARNER_SHARDED_OPTIMIZER_H_
#define RLVLA3_SERVICES_LEARNER_SHARDED_OPTIMIZER_H_

#include <ATen/core/Tensor.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "policies/trainable_policy.h"
#include "services/learner/gradient_reducer.h"
#include "services/learner/optimizer_shards.h"

namespace torch::optim {
class AdamW;
}

namespace rlvla3 {

struct ShardedOptimizerOptions {
  double lr = 1e-4, weight_decay = 0.0, max_grad_norm = 1.0;
  double value_lr = 1e-3;         // the value head's learning rate
  double action_scale_lr = 1e-2;  // the action log-temperatures' rate
  // Data-parallel: all-reduce gradient buckets while the step's last
  // backward pass still runs (GradientReducer::OverlapBegin).
  bool overlap_allreduce = true;
};

class ShardedOptimizer {
 public:
  // Over `policy`'s parameters (on their device already); `reducer` (may be
  // null: alone) must outlive the optimizer.
  ShardedOptimizer(TrainablePolicy& policy,
                   const ShardedOptimizerOptions& options,
                   GradientReducer* reducer);
  ~ShardedOptimizer();
  ShardedOptimizer(const ShardedOptimizer&) = delete;
  ShardedOptimizer& operator=(const ShardedOptimizer&) = delete;

  bool distributed() const {
    return reducer_ != nullptr && reducer_->world_size() > 1;
  }
  int rank() const { return distributed() ? reducer_->rank() : 0; }
  int world_size() const { return distributed() ? reducer_->world_size() : 1; }
  // OK, or the first failed collective.
  const absl::Status& status() const { return group_error_; }

  // loss.backward(); the step's last one (data-parallel) hands each final
  // gradient to the reducer as autograd produces it (overlap).
  void Backward(const at::Tensor& loss, bool last_of_step);
  // The gradients multiplied by `scale` (data-parallel: averaged over the
  // ranks first), then clipped to max_grad_norm; their global norm before
  // clipping, as a double tensor on the device (no host read).
  at::Tensor ClipGradients(double scale);
  // Whether `local` holds on this rank or any other (alone: `local`; after
  // a failed collective: `if_failed`).
  bool AnyOnAnyRank(bool local, bool if_failed = true);
  // The mean over the ranks of `values` (a tensor on the parameters'
  // device, reduced in place); alone: unchanged.
  void AllReduceMean(at::Tensor values);
  // The optimizer's step on the parameters this rank owns, then (data-
  // parallel) every rank gathers the others' updated parameters.
  void Step();
  void ZeroGradients();
  // The weights' learning rate (parameter group 0).
  void SetWeightsLr(double lr);
  // Every rank takes rank 0's parameters.
  absl::Status SyncParameters();
  // This rank's shard with `state`, complete once every rank's is written
  // (the ranks agree; rank 0 marks the checkpoint).
  absl::Status Save(const std::string& dir, const LearnerTrainingState& state);
  absl::StatusOr<LearnerTrainingState> Load(const std::string& dir);

  // Where the parameters are.
  at::Device device() const;

 private:
  void Build(TrainablePolicy& policy);

  const ShardedOptimizerOptions options_;
  GradientReducer* reducer_;
  std::vector<at::Tensor> params_;  // every trainable parameter
  // params_[i] is in a group at rate 0 (e.g. the log-temperatures at
  // action_scale_lr 0): never moved, so left out of the clipped norm.
  std::vector<bool> frozen_;
  std::vector<int> owners_;  // the rank whose optimizer updates params_[i]
  bool overlapped_ = false;  // the reducer holds this step's gradients
  absl::Status group_error_;
  std::unique_ptr<torch::optim::AdamW> optimizer_;
};

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_LEARNER_SHARDED_OPTIMIZER_H_
