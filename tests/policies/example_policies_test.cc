// The two example policies docs/policies.md walks through (issue 50, item
// 5), exported by their scripts with Debian's python3-torch and
// python3-sentencepiece: the OpenVLA-shaped one (one camera, its own
// SentencePiece prompt, 256 bins) and the Octo-shaped one (two cameras,
// proprio, UTF-8 bytes, a Gaussian chunk of 8) load, act and score their
// own samples; the SentencePiece model travels into a checkpoint and loads
// back from there, and a policy whose model file is gone is refused naming
// it.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "policies/checkpoint_context.h"
#include "policies/instruction_encoder.h"
#include "policies/torchscript_policy.h"
#include "tests/test_dir.h"

namespace rlvla3 {
namespace {

void Export(const std::string& script, const std::string& dir) {
  const std::string cmd = std::string(RLVLA3_PYTHON) + " " + RLVLA3_SOURCE_DIR +
                          "/scripts/examples/" + script + " " + dir +
                          " --size 32 > /dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
}

PolicyInput Input(int64_t B, int64_t cameras, const at::Tensor& text,
                  const at::Tensor& lens) {
  PolicyInput in;
  in.images = torch::randint(0, 256, {B, cameras, 32, 32, 3}, torch::kByte);
  in.proprio = torch::randn({B, 8});
  in.text = text.expand({B, text.size(1)}).contiguous();
  in.text_len = lens.expand({B}).contiguous();
  return in;
}

// Acts, and scores what it took as the learner will.
void ActsAndScores(TorchScriptPolicy& p, int64_t chunk) {
  absl::StatusOr<InstructionEncoder> e = InstructionEncoder::Of(
      p.declared_interface(), p.max_text_len(), TextTokenizer());
  ASSERT_TRUE(e.ok()) << e.status();
  at::Tensor text, lens;
  ASSERT_TRUE(e->EncodeTable({"lift the red cube"}, &text, &lens).ok());
  EXPECT_GT(lens[0].item<int64_t>(), 0);
  const int64_t C =
      static_cast<int64_t>(p.declared_interface()->cameras.size());
  const PolicyInput in = Input(3, C, text, lens);
  const ActResult a = p.Act(in, /*greedy=*/false);
  EXPECT_EQ(a.actions.sizes(), (std::vector<int64_t>{3, chunk, 7}));
  EXPECT_TRUE((a.actions.abs() <= 1.0).all().item<bool>());
  const EvalResult ev = p.Evaluate(in, a.tokens);
  EXPECT_TRUE(torch::allclose(a.log_probs, ev.log_probs, 1e-4, 1e-5));
  // A batch with another camera count than declared is refused, not cut.
  EXPECT_THROW(p.Act(Input(3, C + 1, text, lens), false), c10::Error);
}

TEST(ExamplePolicies,
     OneCameraWithItsSentencePiecePromptTravelsIntoCheckpoints) {
  if (std::string(RLVLA3_PYTHON).empty()) {
    GTEST_SKIP() << "no python3 with torch and sentencepiece";
  }
  const testutil::TestDir dir;
  Export("one_camera_policy.py", dir.path());
  absl::StatusOr<std::unique_ptr<TorchScriptPolicy>> p =
      TorchScriptPolicy::Load(dir.File("one_camera.pt"));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ((*p)->declared_interface()->instruction.tokenizer,
            InstructionKind::kSentencePiece);
  ActsAndScores(**p, 4);
  ASSERT_TRUE((*p)->Save(dir.File("ck"), TextTokenizer(), 7).ok());
  EXPECT_TRUE(std::filesystem::exists(dir.File("ck/one_camera.model")));
  // context.json records the model the checkpoint loads: its own copy.
  CheckpointContext ctx;
  ctx.image_width = ctx.image_height = 32;
  ctx.cameras = {"agentview"};
  ctx.chunk = ctx.execute_steps = 4;
  ctx.interface = (*p)->declared_interface();
  ASSERT_TRUE(WriteCheckpointContext(dir.File("ck"), ctx).ok());
  absl::StatusOr<std::optional<CheckpointContext>> read =
      ReadCheckpointContext(dir.File("ck"));
  ASSERT_TRUE(read.ok() && read->has_value()) << read.status();
  EXPECT_EQ((*read)->interface->instruction.model, "one_camera.model");
  std::filesystem::remove(dir.File("one_camera.model"));
  absl::StatusOr<PolicyCheckpoint> back = LoadPolicyCheckpoint(dir.File("ck"));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->version, 7u);
  // Without its model beside it, the module is refused naming the file.
  p = TorchScriptPolicy::Load(dir.File("one_camera.pt"));
  ASSERT_FALSE(p.ok());
  EXPECT_NE(std::string(p.status().message())
                .find("instruction.model: " +
                      std::filesystem::path(dir.File("one_camera.model"))
                          .lexically_normal()
                          .string() +
                      ": not a SentencePiece model that loads"),
            std::string::npos)
      << p.status();
}

TEST(ExamplePolicies, ATokenizerNamedByItsAbsolutePathReloadsFromACheckpoint) {
  if (std::string(RLVLA3_PYTHON).empty()) {
    GTEST_SKIP() << "no python3 with torch and sentencepiece";
  }
  const testutil::TestDir dir;
  Export("one_camera_policy.py", dir.path());  // for its one_camera.model
  const std::string model =
      std::filesystem::absolute(dir.File("one_camera.model")).string();
  const std::string declaration =
      R"({"format": "rl-vla3/interface/v1",
          "cameras": [{"name": "agentview", "height": 32, "width": 32}],
          "proprio": 0, "chunk": 4,
          "action": {"kind": "bins", "size": 7, "bins": 256},
          "instruction": {"tokenizer": "sentencepiece", "max_len": 16,
                          "model": ")" +
      model + R"("}})";
  const std::string pt = dir.File("abs.pt");
  const std::string cmd = std::string(RLVLA3_PYTHON) + " " + RLVLA3_SOURCE_DIR +
                          "/scripts/export_torchscript_policy.py " + pt +
                          " --declare '" + declaration + "' > /dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  absl::StatusOr<std::unique_ptr<TorchScriptPolicy>> p =
      TorchScriptPolicy::Load(pt);
  ASSERT_TRUE(p.ok()) << p.status();
  // The checkpoint's manifest names its own copy; the module's method still
  // names the export's path, and the manifest wins.
  ASSERT_TRUE((*p)->Save(dir.File("ck"), TextTokenizer(), 2).ok());
  absl::StatusOr<PolicyCheckpoint> back = LoadPolicyCheckpoint(dir.File("ck"));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->policy->declared_interface()->instruction.max_len, 16);
}

TEST(ExamplePolicies, AGaussianChunkOfEightOnThreeCamerasActsAndScores) {
  if (std::string(RLVLA3_PYTHON).empty()) {
    GTEST_SKIP() << "no python3 with torch and sentencepiece";
  }
  const testutil::TestDir dir;
  Export("gaussian_chunk_policy.py", dir.path());
  absl::StatusOr<std::unique_ptr<TorchScriptPolicy>> p =
      TorchScriptPolicy::Load(dir.File("gaussian_chunk.pt"));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ((*p)->declared_interface()->action.kind, ActionKind::kGaussian);
  EXPECT_EQ((*p)->chunk(), 8);
  EXPECT_EQ((*p)->declared_interface()->cameras.size(), 3u);
  ActsAndScores(**p, 8);
  // Its checkpoint's sidecar says nothing of bins: a Gaussian head has none.
  ASSERT_TRUE((*p)->Save(dir.File("ck"), TextTokenizer(), 1).ok());
  std::ifstream side(dir.File("ck/policy.json"));
  const std::string text((std::istreambuf_iterator<char>(side)),
                         std::istreambuf_iterator<char>());
  EXPECT_EQ(text.find("\"bins\""), std::string::npos) << text;
  EXPECT_TRUE(LoadPolicyCheckpoint(dir.File("ck")).ok());
}

}  // namespace
}  // namespace rlvla3
