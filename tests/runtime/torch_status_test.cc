// A LibTorch error thrown inside a role's body becomes that role's status at
// the boundary: one line naming where, without LibTorch's backtrace; a body
// that returns normally passes its status through.
#include "runtime/torch_status.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "runtime/supervisor.h"

namespace rlvla3 {
namespace {

TEST(TorchBoundary, IndexOutOfRangeBecomesTheRolesError) {
  const at::Tensor table = torch::zeros({4, 3});
  const absl::Status s = TorchBoundary("learner", [&] {
    table.index_select(0, torch::tensor({4}, torch::kLong));  // row 4 of 4
    return absl::OkStatus();
  });
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(s.message().rfind("learner: libtorch: ", 0), 0u) << s;
  EXPECT_NE(s.message().find("out of range"), std::string::npos) << s;
  EXPECT_EQ(s.message().find('\n'), std::string::npos) << s;  // one line
}

TEST(TorchBoundary, PassesTheBodysStatusThrough) {
  EXPECT_TRUE(TorchBoundary("x", [] { return absl::OkStatus(); }).ok());
  EXPECT_EQ(TorchBoundary("x", [] { return absl::NotFoundError("y"); }),
            absl::NotFoundError("y"));
}

TEST(TorchBoundary, ARoleThreadEndsWithTheErrorNotAnException) {
  Supervisor sup(nullptr);
  sup.Spawn("learner", [] {
    return TorchBoundary("learner", []() -> absl::Status {
      TORCH_CHECK(false, "bad segment");
      return absl::OkStatus();
    });
  });
  const absl::Status s = sup.Wait();
  EXPECT_NE(s.message().find("learner: libtorch: bad segment"),
            std::string::npos)
      << s;
}

}  // namespace
}  // namespace rlvla3
