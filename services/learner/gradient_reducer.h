// File: services/learner/gradient_reducer.h
// -----------------------------------------------------------------------------
// GradientReducer: how the ranks of a data-parallel learner agree on one
// update. Each rank trains its share of the global batch (its LearnerCore's
// global_units = global batch / world size, so its loss weights are world
// times larger), then the ranks average their gradients, so every rank holds
// the gradient of the whole batch and takes the same optimizer step. A step
// that is non-finite on any rank is skipped on every rank (AnyOf).
//
// Implementations: LocalReducer (world size 1, no communication; what one
// process uses) and the c10d process groups in c10d_reducer.h (Gloo on CPU,
// NCCL on GPU), the only file that includes c10d.
//
// Example:
//   std::unique_ptr<GradientReducer> r = MakeLocalReducer();
//   LearnerCore core(policy, text, text_len, options, 0, r.get());
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_LEARNER_GRADIENT_REDUCER_H_
#define RLVLA3_SERVICES_LEARNER_GRADIENT_REDUCER_H_

#include <ATen/core/Tensor.h>

#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace rlvla3 {

class GradientReducer {
 public:
  virtual ~GradientReducer() = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  // This rank's place among its machine's ranks (torchrun's LOCAL_RANK):
  // which of the machine's GPUs it takes.
  virtual int local_rank() const { return 0; }
  // Replaces each tensor by its mean over the ranks (same shapes and order
  // on every rank).
  virtual absl::Status AllReduceMean(absl::Span<at::Tensor> tensors) = 0;
  // True on every rank if `local` is true on any.
  virtual absl::StatusOr<bool> AnyOf(bool local) = 0;
  // Every rank gets `root`'s tensors (e.g. the parameters at start).
  virtual absl::Status Broadcast(absl::Span<at::Tensor> tensors, int root) = 0;
  // ZeRO-1's gather: each tensor takes the value its owner rank holds
  // (owners[i] for tensors[i]; optimizer_shards.h assigns them).
  virtual absl::Status GatherShards(absl::Span<at::Tensor> tensors,
                                    absl::Span<const int> owners) = 0;

  // All-reduce overlapped with the step's last backward pass: OverlapBegin
  // before it (the parameters, in order), OverlapReady from the autograd
  // hooks as each gradient becomes final (its whole accumulated value), then
  // OverlapFinish with every gradient after it: the mean over the ranks, as
  // AllReduceMean would give. Buckets start as soon as they are complete, in
  // a fixed order (the same collectives on every rank whatever order autograd
  // takes). Without overlap support (the default) it is AllReduceMean.
  virtual void OverlapBegin(absl::Span<const at::Tensor> params) {}
  virtual void OverlapReady(size_t index, const at::Tensor& grad) {}
  virtual absl::Status OverlapFinish(absl::Span<at::Tensor> grads) {
    return AllReduceMean(grads);
  }
};

// World size 1: every call is a no-op.
std::unique_ptr<GradientReducer> MakeLocalReducer();

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_LEARNER_GRADIENT_REDUCER_H_
