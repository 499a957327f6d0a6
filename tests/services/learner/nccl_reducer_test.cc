// The learner's NCCL backend (built with RLVLA3_WITH_NCCL): compiled and
// linked everywhere the toolkit is, run where a GPU is. Without a GPU the
// group reports the missing device as an error naming NCCL/CUDA (the path is
// really taken, not "unimplemented"); with one, a world of one rank joins
// through the TCPStore, agrees on a step and refuses CPU tensors clearly.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <unistd.h>

#include <string>

#include "services/learner/c10d_reducer.h"

namespace rlvla3 {
namespace {

ProcessGroupOptions OneRank() {
  ProcessGroupOptions o;
  o.backend = "nccl";
  o.master_port = 42000 + static_cast<int>(getpid() % 2000);
  o.timeout = absl::Seconds(20);
  return o;
}

bool HasGpu() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

TEST(NcclReducer, WithoutAGpuTheGroupFailsNamingTheDevice) {
  if (HasGpu()) GTEST_SKIP() << "a GPU is present (the other test runs)";
  absl::StatusOr<std::unique_ptr<GradientReducer>> r =
      ConnectProcessGroup(OneRank());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(r.status().message().find("nccl"), std::string::npos) << r.status();
}

TEST(NcclReducer, OneRankJoinsAgreesAndRefusesCpuTensors) {
  if (!HasGpu()) GTEST_SKIP() << "no GPU on this machine";
  absl::StatusOr<std::unique_ptr<GradientReducer>> r =
      ConnectProcessGroup(OneRank());
  ASSERT_TRUE(r.ok()) << r.status();
  absl::StatusOr<bool> any = (*r)->AnyOf(true);
  ASSERT_TRUE(any.ok()) << any.status();
  EXPECT_TRUE(*any);
  std::vector<at::Tensor> cpu = {torch::ones({4})};
  const absl::Status s = (*r)->AllReduceMean(absl::MakeSpan(cpu));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
}

}  // namespace
}  // namespace rlvla3
