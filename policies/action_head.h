// File: policies/action_head.h
// -----------------------------------------------------------------------------
// ActionHead: the distribution a policy's network parameterises, for the
// action space it declares (policies/policy_interface.h). The network emits
// `width()` numbers per chunk step; the head samples from them, gives the
// exact log-probability and entropy of what was taken (the RL losses need
// both), and turns what was taken into the controller's actions.
//
//   bins:      width = sum of the dimensions' bin counts: dimension d's
//              logits follow dimension d-1's. Taken: int64 bin indices
//              [B, K, A]. Log-prob: sum over dimensions of log_softmax at
//              the bin; entropy likewise summed. Bin i of dimension d stands
//              for low[d] + (i + 0.5) (high[d] - low[d]) / bins[d].
//   gaussian:  width = 2 A: A means, then A log standard deviations
//              (clamped to [kMinLogStd, kMaxLogStd]). Taken: the float sample
//              [B, K, A], as drawn (not clipped). Closed form per dimension:
//              log N(x; m, s) = -(x - m)^2 / (2 s^2) - log s - log(2 pi) / 2,
//              entropy = 1/2 + log(2 pi) / 2 + log s; both summed over A.
//              Greedy takes the mean.
//
// Controller actions: the policy's range [low[d], high[d]] maps linearly
// onto the controller's [-1, 1] (ToControl): ctrl = 2 (a - low) / (high - low)
// - 1, clipped to [-1, 1]; a Gaussian sample is clipped there, its log-prob
// stays that of the unclipped sample. The mapping happens where actions are
// made, so the envs and any outside simulator see controller actions only.
//
// Example:
//   absl::StatusOr<std::unique_ptr<ActionHead>> h = MakeActionHead(space);
//   at::Tensor params = net(...);               // [B, K, (*h)->width()]
//   at::Tensor taken, logp, entropy;
//   (*h)->Sample(params, /*greedy=*/false, &taken, &logp);
//   (*h)->Evaluate(params, taken, &logp, &entropy);  // differentiable
//   at::Tensor ctrl = (*h)->ToControl(taken);        // [B, K, A] in [-1, 1]
// -----------------------------------------------------------------------------
#ifndef RLVLA3_POLICIES_ACTION_HEAD_H_
#define RLVLA3_POLICIES_ACTION_HEAD_H_

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "policies/policy_interface.h"

namespace rlvla3 {

class ActionHead {
 public:
  static constexpr double kMinLogStd = -20.0, kMaxLogStd = 2.0;

  virtual ~ActionHead() = default;
  // Numbers the network emits per chunk step.
  virtual int64_t width() const = 0;
  // Samples (greedy: the most likely) from `params` [B, K, width()]:
  // `taken` [B, K, A] and its log-prob [B, K]. No autograd.
  virtual void Sample(const at::Tensor& params, bool greedy, at::Tensor* taken,
                      at::Tensor* log_probs) const = 0;
  // Log-prob [B, K] of `taken` and entropy [B, K] under `params`, with
  // autograd through `params`. Either output may be null.
  virtual void Evaluate(const at::Tensor& params, const at::Tensor& taken,
                        at::Tensor* log_probs, at::Tensor* entropy) const = 0;
  // `params` sampled at `temperature` (1: as they are): bins' logits
  // divided by it, a Gaussian's standard deviations multiplied by it.
  virtual at::Tensor Temper(const at::Tensor& params,
                            double temperature) const = 0;
  // What `taken` stands for in the policy's own range, float32 [B, K, A].
  virtual at::Tensor ToActions(const at::Tensor& taken) const = 0;
  // The controller's actions, float32 [B, K, A] in [-1, 1].
  at::Tensor ToControl(const at::Tensor& taken) const;
  // The inverse: what this head takes for controller actions `ctrl`
  // [..., A] (bins: the bin holding each, int64; Gaussian: the value in the
  // policy's range). What SFT clones from an expert's actions.
  at::Tensor FromControl(const at::Tensor& ctrl) const;
  const ActionSpace& space() const { return space_; }

 protected:
  explicit ActionHead(ActionSpace space) : space_(std::move(space)) {}

 private:
  ActionSpace space_;
};

// Bytes a rollout stores per action dimension taken (SegmentShape's
// taken_bytes): 1 when every dimension has at most 256 bins, else 4 (a
// float32: a Gaussian sample, or a bin index).
int TakenBytes(const ActionSpace& space);

// The head for `space`; InvalidArgument where ValidatePolicyInterface would
// refuse the space.
absl::StatusOr<std::unique_ptr<ActionHead>> MakeActionHead(
    const ActionSpace& space);

}  // namespace rlvla3

#endif  // RLVLA3_POLICIES_ACTION_HEAD_H_
