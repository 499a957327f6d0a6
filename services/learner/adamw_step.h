// File: services/learner/adamw_step.h
// -----------------------------------------------------------------------------
// AdamW steps over whole parameter groups: torch::optim::AdamW::step's update,
// to the bit on a CPU, with the _foreach_ ops (a handful of multi-tensor
// launches per group instead of ~9 kernels per tensor) and, on a GPU with
// LibTorch >= 2.1, ATen's fused AdamW kernel (one launch per group). The state
// stays the AdamW's own (AdamWParamState per parameter), so the checkpointed
// ZeRO-1 shards (optimizer_shards.h) read and write it as before. AMSGrad is
// left to AdamW::step.
//
// Also the gradient chores of a step, over lists: zeroing and the global-norm
// clip without a host read.
//
// Example:
//   torch::optim::AdamW opt(groups, torch::optim::AdamWOptions(1e-4));
//   loss.backward();
//   at::Tensor norm = ClipGradNorm(grads, /*max_norm=*/1.0);  // on the device
//   StepAdamW(opt);
//   ZeroParameterGradients(params);
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_LEARNER_ADAMW_STEP_H_
#define RLVLA3_SERVICES_LEARNER_ADAMW_STEP_H_

#include <ATen/core/Tensor.h>

#include <memory>
#include <vector>

namespace torch::optim {
class AdamW;
struct AdamWParamState;
}  // namespace torch::optim

namespace rlvla3 {

// One AdamW step of every parameter with a gradient, group by group.
void StepAdamW(torch::optim::AdamW& opt);

// The state AdamW keeps for `p` (nullptr: none yet), and setting it.
torch::optim::AdamWParamState* FindAdamWState(torch::optim::AdamW& opt,
                                              const at::Tensor& p);
void SetAdamWState(torch::optim::AdamW& opt, const at::Tensor& p,
                   std::unique_ptr<torch::optim::AdamWParamState> state);

// Zeroes every defined gradient of `params` in place (kept allocated).
void ZeroParameterGradients(std::vector<at::Tensor>& params);

// The global 2-norm of `grads` (a 0-d float tensor on their device); with
// max_norm > 0 they are scaled in place so it is at most max_norm, as
// torch::nn::utils::clip_grad_norm_ without its host read.
at::Tensor ClipGradNorm(const std::vector<at::Tensor>& grads, double max_norm);

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_LEARNER_ADAMW_STEP_H_
