#include "services/learner/gradient_reducer.h"

namespace rlvla3 {
namespace {

class LocalReducer final : public GradientReducer {
 public:
  int rank() const override { return 0; }
  int world_size() const override { return 1; }
  absl::Status AllReduceMean(absl::Span<at::Tensor>) override {
    return absl::OkStatus();
  }
  absl::StatusOr<bool> AnyOf(bool local) override { return local; }
  absl::Status Broadcast(absl::Span<at::Tensor>, int) override {
    return absl::OkStatus();
  }
  absl::Status GatherShards(absl::Span<at::Tensor>,
                            absl::Span<const int>) override {
    return absl::OkStatus();
  }
};

}  // namespace

std::unique_ptr<GradientReducer> MakeLocalReducer() {
  return std::make_unique<LocalReducer>();
}

}  // namespace rlvla3
