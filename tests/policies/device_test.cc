// Devices: names, this machine's GPUs, bf16 autocast, and TinyVLA on a GPU
// (those tests run where LibTorch sees one and skip here, saying why).
#include "policies/device.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "absl/strings/str_cat.h"
#include "policies/tiny_vla_policy.h"
#include "runtime/device_name.h"

namespace rlvla3 {
namespace {

constexpr char kNoGpu[] = "no CUDA device visible to LibTorch here";

TEST(DeviceName, ReadsAsTheConfigWritesIt) {
  EXPECT_FALSE(ParseDeviceName("cpu")->cuda);
  EXPECT_TRUE(ParseDeviceName("cuda")->cuda);
  EXPECT_EQ(ParseDeviceName("cuda")->index, 0);
  EXPECT_EQ(ParseDeviceName("cuda:3")->index, 3);
  for (const char* bad : {"gpu", "cuda:", "cuda:-1", "cuda:x", "CUDA",
                          "cuda:1024", "cpu:0", ""}) {
    EXPECT_FALSE(ParseDeviceName(bad).has_value()) << bad;
  }
}

TEST(ParseDevice, RefusesAGpuThisMachineLacksSayingWhy) {
  EXPECT_EQ(ParseDevice("cpu")->type(), at::kCPU);
  const int n = CudaDeviceCount();
  absl::StatusOr<at::Device> past = ParseDevice(absl::StrCat("cuda:", n));
  ASSERT_FALSE(past.ok());
  EXPECT_NE(past.status().message().find(
                n == 0 ? "no CUDA device on this machine" : "this machine has"),
            std::string::npos)
      << past.status();
  absl::StatusOr<at::Device> first = ParseDevice("cuda");
  EXPECT_EQ(first.ok(), n > 0) << first.status();
  if (first.ok()) EXPECT_EQ(*first, at::Device(at::kCUDA, 0));
  EXPECT_FALSE(ParseDevice("tpu").ok());
}

TEST(AutocastGuard, RunsMatmulsInBf16WhileAliveOnly) {
  const at::Tensor a = torch::randn({4, 4}), b = torch::randn({4, 4});
  {
    AutocastGuard bf16(at::kCPU, /*enabled=*/true);
    EXPECT_EQ(torch::mm(a, b).scalar_type(), at::kBFloat16);
    {
      AutocastGuard off(at::kCPU, /*enabled=*/false);  // changes nothing
      EXPECT_EQ(torch::mm(a, b).scalar_type(), at::kBFloat16);
    }
  }
  EXPECT_EQ(torch::mm(a, b).scalar_type(), at::kFloat);
}

TEST(HostStaging, PinsOnlyForAGpu) {
  const at::Tensor host = torch::empty({8}, HostStaging(at::kCPU, at::kByte));
  EXPECT_FALSE(host.is_pinned());
  if (CudaDeviceCount() == 0) GTEST_SKIP() << kNoGpu;
  const at::Tensor pinned =
      torch::empty({8}, HostStaging(at::Device(at::kCUDA, 0), at::kByte));
  EXPECT_TRUE(pinned.is_pinned());
}

// B observations on the host, staged for `bound_for` (pinned for a GPU).
PolicyInput Input(int64_t B, const at::Device& bound_for = at::kCPU) {
  PolicyInput in;
  in.images = torch::randint(0, 256, {B, 2, 32, 32, 3}, torch::kByte);
  in.proprio = torch::randn({B, 8});
  in.text = torch::randint(2, 16, {B, 5}, torch::kLong);
  in.text_len = torch::tensor(std::vector<int64_t>{5, 2, 3, 1}, torch::kLong)
                    .narrow(0, 0, B);
  if (bound_for.is_cuda()) {
    for (at::Tensor* t : {&in.images, &in.proprio, &in.text}) {
      *t = t->pin_memory();
    }
  }
  return in;
}

TEST(HostStaging, ValuesReachTheDeviceInOrder) {
  const at::Tensor v =
      HostValuesToDevice(std::vector<int64_t>{4, -1, 7}, at::kCPU);
  EXPECT_TRUE(torch::equal(v, torch::tensor({4, -1, 7}, torch::kLong)));
  const at::Tensor d = HostValuesToDevice(std::vector<double>{0.5}, at::kCPU);
  EXPECT_EQ(d.scalar_type(), torch::kDouble);
  EXPECT_EQ(d.item<double>(), 0.5);
  if (CudaDeviceCount() == 0) GTEST_SKIP() << kNoGpu;
  const at::Device gpu(at::kCUDA, 0);
  EXPECT_TRUE(torch::equal(
      HostValuesToDevice(std::vector<int64_t>{4, -1, 7}, gpu).cpu(),
      torch::tensor({4, -1, 7}, torch::kLong)));
}

TEST(HostStaging, ToDeviceRefusesPageableHostMemoryForAGpu) {
  // On the CPU nothing moves, pinned or not.
  const at::Tensor host = torch::ones({3});
  EXPECT_TRUE(ToDevice(host, at::kCPU).is_same(host));
  if (CudaDeviceCount() == 0) GTEST_SKIP() << kNoGpu;
  const at::Device gpu(at::kCUDA, 0);
  try {
    (void)ToDevice(host, gpu);
    ADD_FAILURE() << "a pageable host tensor was copied to the GPU";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("pageable"), std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(ToDevice(host.pin_memory(), gpu).is_cuda());
}

TEST(TinyVLAOnGpu, EvaluateAgreesWithTheCpuAndKeepsLengthsOnTheHost) {
  if (CudaDeviceCount() == 0) GTEST_SKIP() << kNoGpu;
  torch::manual_seed(3);
  const at::Device gpu(at::kCUDA, 0);
  TinyVLAPolicy cpu(TinyVLA(TinyVLAOptions().vocab_size(16).chunk(3)), 0);
  std::shared_ptr<TrainablePolicy> on_gpu = cpu.Snapshot(0);
  on_gpu->To(gpu);
  EXPECT_EQ(on_gpu->device(), gpu);
  const PolicyInput in = Input(4, gpu);
  const PolicyInput moved = ToDevice(in, gpu);
  EXPECT_TRUE(moved.images.is_cuda());
  EXPECT_FALSE(moved.text_len.is_cuda());
  const at::Tensor tokens = torch::randint(0, 256, {4, 3, 7}, torch::kLong);
  const EvalResult a = cpu.Evaluate(in, tokens);
  const EvalResult b = on_gpu->Evaluate(moved, tokens.to(gpu));
  EXPECT_TRUE(torch::allclose(a.log_probs, b.log_probs.cpu(), 1e-3, 1e-3));
  EXPECT_TRUE(torch::allclose(a.values, b.values.cpu(), 1e-3, 1e-3));
  const ActResult act = on_gpu->Act(moved, /*greedy=*/true);
  EXPECT_TRUE(act.tokens.is_cuda());
  // A snapshot of a GPU policy stays on it (device-to-device).
  EXPECT_EQ(on_gpu->Snapshot(1)->device(), gpu);
}

TEST(TinyVLAOnGpu, Bf16AutocastStaysCloseToFp32) {
  if (CudaDeviceCount() == 0) GTEST_SKIP() << kNoGpu;
  const at::Device gpu(at::kCUDA, 0);
  torch::manual_seed(4);
  TinyVLAPolicy policy(TinyVLA(TinyVLAOptions().vocab_size(16).chunk(3)), 0);
  policy.To(gpu);
  const PolicyInput in = ToDevice(Input(4, gpu), gpu);
  const at::Tensor tokens = torch::randint(
      0, 256, {4, 3, 7}, torch::TensorOptions(torch::kLong).device(gpu));
  const at::Tensor fp32 = policy.Evaluate(in, tokens).log_probs;
  at::Tensor bf16;
  {
    AutocastGuard autocast(gpu, true);
    bf16 = policy.Evaluate(in, tokens).log_probs.to(torch::kFloat);
  }
  EXPECT_FALSE(torch::equal(fp32, bf16));
  EXPECT_TRUE(torch::allclose(fp32, bf16, 0.05, 0.5));
}

}  // namespace
}  // namespace rlvla3
