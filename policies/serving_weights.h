// File: policies/serving_weights.h
// -----------------------------------------------------------------------------
// ServingWeights: an inference actor's own copy of the policy in a lower
// precision (bf16), made once and refreshed in place at every new version.
// Under autocast a float32 policy's weights are cast again at every batch
// (autocast caches casts of trainable leaves only, and a served snapshot
// has no gradients); a bf16 copy is cast once per version, and its tensors
// keep their addresses from version to version.
//
// Example:
//   ServingWeights serving(at::kBFloat16);
//   std::shared_ptr<Policy> p = serving.Refresh(weights->Latest().value);
//   { AutocastGuard bf16(device, true); ActResult a = p->Act(in, false); }
// -----------------------------------------------------------------------------
#ifndef RLVLA3_POLICIES_SERVING_WEIGHTS_H_
#define RLVLA3_POLICIES_SERVING_WEIGHTS_H_

#include <ATen/core/Tensor.h>

#include <memory>
#include <string>
#include <vector>

#include "policies/policy.h"
#include "policies/trainable_policy.h"

namespace rlvla3 {

class ServingWeights {
 public:
  explicit ServingWeights(at::ScalarType dtype) : dtype_(dtype) {}
  // The serving copy of `latest` at its version: made on first use (or
  // when the architecture changes), else `latest`'s weights copied into it.
  // `latest` itself where it is not a TrainablePolicy or cannot be cast
  // (reason() says why).
  std::shared_ptr<Policy> Refresh(const std::shared_ptr<Policy>& latest);
  const std::string& reason() const { return reason_; }

 private:
  at::ScalarType dtype_;
  std::shared_ptr<TrainablePolicy> copy_;
  TrainablePolicy::NamedTensors copy_state_;
  std::string reason_;
};

}  // namespace rlvla3

#endif  // RLVLA3_POLICIES_SERVING_WEIGHTS_H_
