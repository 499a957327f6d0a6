#include "policies/serving_weights.h"

#include <torch/torch.h>

#include <utility>

namespace rlvla3 {
namespace {

// Same names and shapes in the same order (the dtypes may differ).
bool SameLayout(const TrainablePolicy::NamedTensors& a,
                const TrainablePolicy::NamedTensors& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].first != b[i].first ||
        !a[i].second.sizes().equals(b[i].second.sizes())) {
      return false;
    }
  }
  return true;
}

}  // namespace

std::shared_ptr<Policy> ServingWeights::Refresh(
    const std::shared_ptr<Policy>& latest) {
  const auto trainable = std::dynamic_pointer_cast<TrainablePolicy>(latest);
  if (trainable == nullptr) {
    reason_ = "not a trainable policy: served as it is";
    return latest;
  }
  if (trainable == copy_) return copy_;
  const TrainablePolicy::NamedTensors src = trainable->State();
  torch::NoGradGuard no_grad;
  if (copy_ != nullptr && copy_->kind() == std::string(trainable->kind()) &&
      copy_->device() == trainable->device() && SameLayout(copy_state_, src)) {
    for (size_t i = 0; i < src.size(); ++i) {
      copy_state_[i].second.copy_(src[i].second);  // casts in place
    }
    copy_->set_version(trainable->version());
    return copy_;
  }
  std::shared_ptr<TrainablePolicy> fresh =
      trainable->Snapshot(trainable->version());
  if (absl::Status s = fresh->ToDtype(dtype_); !s.ok()) {
    reason_ = std::string(s.message());
    copy_.reset();
    copy_state_.clear();
    return latest;
  }
  copy_ = std::move(fresh);
  copy_state_ = copy_->State();
  reason_.clear();
  return copy_;
}

}  // namespace rlvla3
