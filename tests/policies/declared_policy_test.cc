// A TorchScript policy that declares its interface (issue 50, item 1):
// exported by Python (Debian's python3-torch) with an interface() method or
// a <stem>.interface.json manifest and a heads() network, it acts and trains
// through rl-vla3's own action head at its declared shapes (one camera, a
// Gaussian chunk of 8; bins of different counts per dimension). A module
// that emits another shape than it declares (action size, chunk), a
// declaration out of range (bins) and a method and a manifest that disagree
// are refused at load, naming the file and the field.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdlib>
#include <fstream>

#include "policies/torchscript_policy.h"
#include "tests/test_dir.h"

namespace rlvla3 {
namespace {

constexpr char kNoPython[] =
    "no python3 with torch found at configure time (cmake/RlVla3Python.cmake)";

// One 32x32 camera, no proprio, a continuous 7-D Gaussian chunk of 8.
constexpr char kGaussian[] =
    R"({"format": "rl-vla3/interface/v1",
        "cameras": [{"name": "agentview", "height": 32, "width": 32}],
        "proprio": 0,
        "action": {"kind": "gaussian", "size": 7, "low": -1, "high": 1},
        "chunk": 8,
        "instruction": {"tokenizer": "words", "max_len": 12}})";

// Two cameras (wrist first), proprio 8, bins of 64/32/2 per dimension.
constexpr char kBins[] =
    R"({"format": "rl-vla3/interface/v1",
        "cameras": [{"name": "wrist", "height": 32, "width": 32},
                    {"name": "agentview", "height": 32, "width": 32}],
        "proprio": 8,
        "action": {"kind": "bins", "size": 7,
                   "bins": [64, 64, 64, 32, 32, 32, 2],
                   "low": [-1, -1, -1, -0.5, -0.5, -0.5, -1], "high": 1},
        "chunk": 4})";

// Exports `declaration` to dir/name with the script's `extra` flags.
std::string Export(const testutil::TestDir& dir, const std::string& name,
                   const std::string& declaration, const std::string& extra) {
  const std::string out = dir.File(name);
  const std::string cmd = std::string(RLVLA3_PYTHON) + " " + RLVLA3_SOURCE_DIR +
                          "/scripts/export_torchscript_policy.py " + out +
                          " --declare '" + declaration + "' " + extra +
                          " > /dev/null";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  return out;
}

PolicyInput Input(int64_t B, int64_t proprio, int64_t cameras) {
  PolicyInput in;
  in.images = torch::randint(0, 256, {B, cameras, 32, 32, 3}, torch::kByte);
  in.proprio = torch::randn({B, proprio});
  in.text = torch::randint(2, 30, {B, 5}, torch::kLong);
  in.text_len = torch::full({B}, 5, torch::kLong);
  return in;
}

bool StartsWith(const absl::Status& s, const std::string& prefix) {
  return std::string(s.message()).rfind(prefix, 0) == 0;
}

bool Has(const absl::Status& s, const std::string& part) {
  return std::string(s.message()).find(part) != std::string::npos;
}

TEST(DeclaredPolicy, AGaussianChunkOfEightActsAndTrainsThroughItsHead) {
  if (std::string(RLVLA3_PYTHON).empty()) GTEST_SKIP() << kNoPython;
  torch::manual_seed(1);
  const testutil::TestDir dir;
  const std::string path = Export(dir, "g.pt", kGaussian, "");
  absl::StatusOr<std::unique_ptr<TorchScriptPolicy>> p =
      TorchScriptPolicy::Load(path);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE((*p)->declared_interface().has_value());
  EXPECT_EQ((*p)->declared_interface()->cameras.size(), 1u);
  EXPECT_EQ((*p)->chunk(), 8);
  EXPECT_EQ((*p)->max_text_len(), 12);
  const PolicyInput in = Input(3, 1, 1);
  const ActResult a = (*p)->Act(in, /*greedy=*/false);
  EXPECT_EQ(a.tokens.sizes(), (std::vector<int64_t>{3, 8, 7}));
  EXPECT_TRUE(a.tokens.is_floating_point());  // the sample as drawn
  EXPECT_TRUE((a.actions.abs() <= 1.0).all().item<bool>());
  (*p)->SetTraining(true);
  const EvalResult e = (*p)->Evaluate(in, a.tokens);
  EXPECT_TRUE(torch::allclose(a.log_probs, e.log_probs, 1e-4, 1e-5));
  e.log_probs.sum().backward();
  EXPECT_FALSE((*p)->Parameters().weights.empty());
  EXPECT_TRUE((*p)->Parameters().weights.front().grad().defined());
  // At a temperature the stds widen; what it took still scores the same in
  // the learner's Evaluate.
  ASSERT_TRUE((*p)->SetActionTemperature(2.0).ok());
  const ActResult hot = (*p)->Act(in, /*greedy=*/false);
  const EvalResult hot_e = (*p)->Evaluate(in, hot.tokens);
  EXPECT_TRUE(torch::allclose(hot.log_probs, hot_e.log_probs, 1e-4, 1e-5));
  EXPECT_NEAR((hot_e.entropy - e.entropy).mean().item<double>(),
              7 * std::log(2.0), 1e-4);  // + log 2 per dimension
  // Saved and loaded back, it declares the same and samples at the
  // temperature it was saved at.
  ASSERT_TRUE((*p)->Save(dir.File("ck"), TextTokenizer(), 3).ok());
  absl::StatusOr<PolicyCheckpoint> back = LoadPolicyCheckpoint(dir.File("ck"));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->policy->declared_interface(), (*p)->declared_interface());
  back->policy->SetTraining(true);
  const EvalResult back_e = back->policy->Evaluate(in, hot.tokens);
  EXPECT_TRUE(torch::allclose(back_e.entropy, hot_e.entropy, 1e-4, 1e-5));
}

TEST(DeclaredPolicy, PerDimensionBinsFromAManifestStayInRange) {
  if (std::string(RLVLA3_PYTHON).empty()) GTEST_SKIP() << kNoPython;
  torch::manual_seed(2);
  const testutil::TestDir dir;
  const std::string path = Export(dir, "b.pt", kBins, "--manifest");
  absl::StatusOr<std::unique_ptr<TorchScriptPolicy>> p =
      TorchScriptPolicy::Load(path);
  ASSERT_TRUE(p.ok()) << p.status();
  const ActResult a = (*p)->Act(Input(256, 8, 2), /*greedy=*/false);
  ASSERT_EQ(a.tokens.sizes(), (std::vector<int64_t>{256, 4, 7}));
  const int64_t bins[] = {64, 64, 64, 32, 32, 32, 2};
  for (int64_t d = 0; d < 7; ++d) {
    EXPECT_GE(a.tokens.select(-1, d).min().item<int64_t>(), 0) << d;
    EXPECT_LT(a.tokens.select(-1, d).max().item<int64_t>(), bins[d]) << d;
  }
  EXPECT_TRUE((a.actions.abs() <= 1.0).all().item<bool>());
}

TEST(DeclaredPolicy, AWrongActionSizeOrChunkIsRefusedAtLoad) {
  if (std::string(RLVLA3_PYTHON).empty()) GTEST_SKIP() << kNoPython;
  const testutil::TestDir dir;
  // Declares 7 dimensions (14 params per step) but emits 6 (12).
  std::string path = Export(dir, "w.pt", kGaussian, "--out-width 12");
  absl::StatusOr<std::unique_ptr<TorchScriptPolicy>> p =
      TorchScriptPolicy::Load(path);
  ASSERT_FALSE(p.ok());
  EXPECT_TRUE(StartsWith(p.status(), path + ": heads() returned params [1, 8, "
                                            "12] Float; the declaration needs "
                                            "float [1, 8, 14]"))
      << p.status();
  // Declares a chunk of 8 but emits 2.
  path = Export(dir, "c.pt", kGaussian, "--out-chunk 2");
  p = TorchScriptPolicy::Load(path);
  ASSERT_FALSE(p.ok());
  EXPECT_TRUE(Has(p.status(), "chunk 8")) << p.status();
  EXPECT_TRUE(Has(p.status(), "[1, 2, 14]")) << p.status();
}

// A heads() that raises on the load-time probe (TorchScript's own exception,
// not a c10::Error) is refused naming the method and the shapes it was
// given (issue 60: the old probe let JITException reach std::terminate).
TEST(DeclaredPolicy, AHeadsThatRaisesAtTheProbeIsRefusedNamingTheShapes) {
  if (std::string(RLVLA3_PYTHON).empty()) GTEST_SKIP() << kNoPython;
  const testutil::TestDir dir;
  const std::string path = Export(dir, "r.pt", kGaussian, "--raise-in-heads");
  absl::StatusOr<std::unique_ptr<TorchScriptPolicy>> p =
      TorchScriptPolicy::Load(path);
  ASSERT_FALSE(p.ok());
  EXPECT_TRUE(StartsWith(p.status(), path + ": heads() failed on a blank "
                                            "observation of the declared "
                                            "shapes ("))
      << p.status();
  EXPECT_TRUE(Has(p.status(), "this policy refuses every observation"))
      << p.status();
  // The instruction of the declared length (max_len 12), as the run passes.
  EXPECT_TRUE(Has(p.status(),
                  "[1, 32, 32, 3] uint8, proprio [1, 0], text "
                  "[1, 12] int64 of length 1"))
      << p.status();
}

TEST(DeclaredPolicy, BinsOutOfRangeOrTwoDeclarationsThatDisagreeAreRefused) {
  if (std::string(RLVLA3_PYTHON).empty()) GTEST_SKIP() << kNoPython;
  const testutil::TestDir dir;
  std::string bad = kBins;
  bad.replace(bad.find("32, 2]"), 6, "32, 1]");
  std::string path = Export(dir, "r.pt", bad, "");
  absl::StatusOr<std::unique_ptr<TorchScriptPolicy>> p =
      TorchScriptPolicy::Load(path);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message(),
            path + ": interface(): action.bins[6]: 1 (at least 2)");
  // A method declaring chunk 8 and a manifest declaring chunk 4.
  path = Export(dir, "m.pt", kGaussian, "");
  std::string other = kGaussian;
  other.replace(other.find("\"chunk\": 8"), 10, "\"chunk\": 4");
  std::ofstream(dir.File("m.interface.json")) << other;
  p = TorchScriptPolicy::Load(path);
  ASSERT_FALSE(p.ok());
  EXPECT_TRUE(StartsWith(p.status(), dir.File("m.interface.json") + " and " +
                                         path +
                                         ": interface() declare "
                                         "different interfaces"))
      << p.status();
}

}  // namespace
}  // namespace rlvla3
