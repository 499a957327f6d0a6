// A policy exported by Python (Debian's python3-torch) runs through the Policy
// interface; a module without the required methods gives a clear error.
#include "policies/torchscript_policy.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdlib>

#include "tests/test_dir.h"

namespace rlvla3 {
namespace {

constexpr char kNoPython[] =
    "no python3 with torch found at configure time (cmake/RlVla3Python.cmake)";

std::string Export(const testutil::TestDir& dir, const std::string& name,
                   const std::string& extra) {
  const std::string out = dir.File(name);
  const std::string cmd = std::string(RLVLA3_PYTHON) + " " + RLVLA3_SOURCE_DIR +
                          "/scripts/export_torchscript_policy.py " + out + " " +
                          extra + " > /dev/null";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  return out;
}

PolicyInput Input(int64_t B) {
  PolicyInput in;
  in.images = torch::randint(0, 256, {B, 2, 32, 32, 3}, torch::kByte);
  in.proprio = torch::randn({B, 8});
  in.text = torch::randint(2, 30, {B, 5}, torch::kLong);
  in.text_len = torch::full({B}, 5, torch::kLong);
  return in;
}

TEST(TorchScriptPolicy, PythonExportedPolicyRunsThroughTheInterface) {
  if (std::string(RLVLA3_PYTHON).empty()) GTEST_SKIP() << kNoPython;
  const testutil::TestDir dir;
  const std::string path = Export(dir, "policy.pt", "--chunk 3");
  absl::StatusOr<std::unique_ptr<TorchScriptPolicy>> p =
      TorchScriptPolicy::Load(path);
  ASSERT_TRUE(p.ok()) << p.status();
  Policy& policy = **p;
  EXPECT_EQ(policy.chunk(), 3);
  PolicyInput in = Input(4);
  ActResult a = policy.Act(in, /*greedy=*/false);
  EXPECT_EQ(a.tokens.sizes(), (std::vector<int64_t>{4, 3, 7}));
  EXPECT_EQ(a.actions.sizes(), (std::vector<int64_t>{4, 3, 7}));
  EXPECT_TRUE((a.actions.abs() <= 1.0).all().item<bool>());
  EvalResult e = policy.Evaluate(in, a.tokens);
  EXPECT_TRUE(torch::allclose(a.log_probs, e.log_probs, 1e-4, 1e-5));
  EXPECT_TRUE(e.log_probs.requires_grad());
  e.log_probs.sum().backward();  // the learner can train it
}

TEST(TorchScriptPolicy, MissingMethodOrFileIsAClearError) {
  if (std::string(RLVLA3_PYTHON).empty()) GTEST_SKIP() << kNoPython;
  const testutil::TestDir dir;
  const std::string path = Export(dir, "broken.pt", "--without-evaluate");
  absl::StatusOr<std::unique_ptr<TorchScriptPolicy>> p =
      TorchScriptPolicy::Load(path);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message().rfind(
                path + ": TorchScript policy has no 'evaluate' method", 0),
            0u)
      << p.status();
  p = TorchScriptPolicy::Load("/nonexistent/policy.pt");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("not a loadable TorchScript module"),
            std::string::npos);
}

}  // namespace
}  // namespace rlvla3
