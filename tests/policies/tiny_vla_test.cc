#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "policies/checkpoint.h"
#include "policies/safetensors.h"
#include "policies/text_tokenizer.h"
#include "policies/tiny_vla_policy.h"
#include "tests/policies/small_tiny_vla.h"
#include "tests/test_dir.h"

namespace rlvla3 {
namespace {

// B observations at 32x32 with instructions of the given lengths.
PolicyInput MakeInput(const std::vector<int64_t>& lengths, int64_t vocab) {
  const int64_t B = static_cast<int64_t>(lengths.size());
  const int64_t L = *std::max_element(lengths.begin(), lengths.end());
  PolicyInput in;
  in.images = torch::randint(0, 256, {B, 2, 32, 32, 3}, torch::kByte);
  in.proprio = torch::randn({B, 8});
  in.text = torch::zeros({B, L}, torch::kLong);
  for (int64_t b = 0; b < B; ++b) {
    in.text[b]
        .narrow(0, 0, lengths[b])
        .copy_(torch::randint(2, vocab, {lengths[b]}, torch::kLong));
  }
  in.text_len = torch::tensor(lengths, torch::kLong);
  return in;
}

TEST(TinyVLA, PackedAndPaddedForwardPassesAgree) {
  torch::manual_seed(1);
  TinyVLA net(testutil::SmallTinyVLA());
  PolicyInput in = MakeInput({1, 5, 3, 7}, 16);
  TinyVLAOutput padded = net->forward(in, false);
  TinyVLAOutput packed = net->forward(in, true);
  EXPECT_EQ(padded.logits.sizes(), (std::vector<int64_t>{4, 3, 7, 256}));
  EXPECT_TRUE(torch::allclose(padded.logits, packed.logits, 1e-4, 1e-5));
  EXPECT_TRUE(torch::allclose(padded.values, packed.values, 1e-4, 1e-5));
  // Padding really is ignored: extra padding columns change nothing.
  PolicyInput wider = in;
  wider.text = torch::cat({in.text, torch::zeros({4, 3}, torch::kLong)}, 1);
  EXPECT_TRUE(torch::allclose(net->forward(wider, false).logits, padded.logits,
                              1e-4, 1e-5));
}

TEST(TinyVLA, ActionLogScaleIsAPerDimensionInverseTemperature) {
  torch::manual_seed(2);
  TinyVLA net(testutil::SmallTinyVLA());
  net->eval();
  PolicyInput in = MakeInput({4, 2}, 16);
  const at::Tensor base = net->forward(in, false).logits.detach();
  at::Tensor scale;
  for (const auto& p : net->named_parameters()) {
    if (p.key() == "action_log_scale") scale = p.value();
  }
  ASSERT_TRUE(scale.defined());
  ASSERT_EQ(scale.numel(), 7);
  {
    torch::NoGradGuard no_grad;
    scale[2].fill_(std::log(2.0));
  }
  const at::Tensor scaled = net->forward(in, false).logits.detach();
  EXPECT_TRUE(torch::allclose(scaled.select(2, 2), 2 * base.select(2, 2)));
  EXPECT_TRUE(torch::equal(scaled.select(2, 0), base.select(2, 0)));
}

TEST(TinyVLAPolicy, ActLogProbsEqualEvaluateLogProbs) {
  torch::manual_seed(2);
  for (bool packed : {true, false}) {
    TinyVLAPolicy policy(TinyVLA(testutil::SmallTinyVLA()), 7, packed);
    PolicyInput in = MakeInput({2, 4, 4}, 16);
    ActResult a = policy.Act(in, /*greedy=*/false);
    EXPECT_EQ(a.version, 7u);
    EXPECT_EQ(a.tokens.sizes(), (std::vector<int64_t>{3, 3, 7}));
    EXPECT_EQ(a.log_probs.sizes(), (std::vector<int64_t>{3, 3}));
    EXPECT_TRUE((a.actions.abs() <= 1.0).all().item<bool>());
    EXPECT_TRUE((a.tokens >= 0).all().item<bool>() &&
                (a.tokens < 256).all().item<bool>());
    EvalResult e = policy.Evaluate(in, a.tokens);
    EXPECT_TRUE(torch::allclose(a.log_probs, e.log_probs, 1e-4, 1e-5))
        << "packed=" << packed;
    EXPECT_TRUE(torch::allclose(a.values, e.values, 1e-4, 1e-5));
    EXPECT_TRUE(e.log_probs.requires_grad());
    EXPECT_TRUE((e.entropy > 0).all().item<bool>());
    // The log-prob is exact: it matches an independent computation.
    TinyVLAOutput out = policy.net()->forward(in, false);
    at::Tensor manual = torch::log_softmax(out.logits, -1)
                            .gather(-1, a.tokens.unsqueeze(-1))
                            .squeeze(-1)
                            .sum(-1);
    EXPECT_TRUE(torch::allclose(manual, a.log_probs, 1e-5, 1e-6));
  }
}

TEST(TinyVLAPolicy, GreedyIsDeterministicAndGradientsFlow) {
  torch::manual_seed(3);
  TinyVLAPolicy policy(TinyVLA(testutil::SmallTinyVLA()), 0);
  PolicyInput in = MakeInput({3, 3}, 16);
  EXPECT_TRUE(
      torch::equal(policy.Act(in, true).tokens, policy.Act(in, true).tokens));
  EvalResult e = policy.Evaluate(in, policy.Act(in, true).tokens);
  (-e.log_probs.mean() + e.values.pow(2).mean()).backward();
  int with_grad = 0;
  for (const auto& p : policy.net()->parameters())
    with_grad += p.grad().defined();
  EXPECT_EQ(with_grad, static_cast<int>(policy.net()->parameters().size()));
}

TEST(TextTokenizer, DeterministicVocabularyAndEncoding) {
  TextTokenizer a =
      TextTokenizer::Build({"put the red cube in the bowl", "open the drawer"});
  TextTokenizer b =
      TextTokenizer::Build({"open the drawer", "put the red cube in the bowl"});
  EXPECT_EQ(a.words(), b.words());
  EXPECT_EQ(a.words(), (std::vector<std::string>{"bowl", "cube", "drawer", "in",
                                                 "open", "put", "red", "the"}));
  EXPECT_EQ(a.size(), 10);
  EXPECT_EQ(a.Encode("Put the RED cube!"), (std::vector<int64_t>{7, 9, 8, 3}));
  EXPECT_EQ(a.Encode("the purple cube"),
            (std::vector<int64_t>{9, TextTokenizer::kUnknown, 3}));
  EXPECT_EQ(a.Encode("the the the", 2).size(), 2u);
  EXPECT_FALSE(TextTokenizer::FromWords({"b", "a"}).ok());
}

TEST(Safetensors, RoundTripIsExact) {
  const testutil::TestDir tmp;
  const std::string path = tmp.File("t.safetensors");
  std::vector<std::pair<std::string, at::Tensor>> in = {
      {"a.weight", torch::randn({3, 4})},
      {"b", torch::randint(0, 100, {5}, torch::kLong)},
      {"c", torch::randn({2, 2}).to(torch::kBFloat16)},
      {"empty", torch::zeros({0, 3})}};
  ASSERT_TRUE(WriteSafetensors(path, in, {{"version", "4"}}).ok());
  absl::StatusOr<SafetensorsFile> f = ReadSafetensors(path);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->metadata.at("version"), "4");
  ASSERT_EQ(f->tensors.size(), in.size());
  for (const auto& [name, t] : in) {
    bool found = false;
    for (const auto& [n2, t2] : f->tensors) {
      if (n2 == name) {
        found = true;
        EXPECT_TRUE(torch::equal(t, t2)) << name;
      }
    }
    EXPECT_TRUE(found) << name;
  }
}

TEST(Safetensors, MalformedFilesGiveClearErrors) {
  const testutil::TestDir tmp;
  const std::string path = tmp.File("bad.safetensors");
  auto write = [&](const std::string& bytes) {
    std::ofstream(path, std::ios::binary) << bytes;
  };
  write("abc");
  EXPECT_EQ(ReadSafetensors(path).status().message(),
            path +
                ": not a valid safetensors file: shorter than its 8-byte "
                "header length");
  std::string hdr =
      "{\"w\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]}}";
  uint64_t n = hdr.size();
  write(std::string(reinterpret_cast<const char*>(&n), 8) + hdr +
        std::string(8, '\0'));
  EXPECT_NE(ReadSafetensors(path).status().message().find(
                "tensor w data_offsets [0, 16)"),
            std::string::npos);
  n = 1u << 20;
  write(std::string(reinterpret_cast<const char*>(&n), 8) + "{}");
  EXPECT_NE(ReadSafetensors(path).status().message().find("exceeds the file"),
            std::string::npos);
  n = 5;
  write(std::string(reinterpret_cast<const char*>(&n), 8) + "nope!");
  EXPECT_NE(ReadSafetensors(path).status().message().find("not a JSON object"),
            std::string::npos);
}

TEST(Checkpoint, SaveLoadRoundTripIsExact) {
  torch::manual_seed(4);
  TinyVLA net(testutil::SmallTinyVLA());
  TextTokenizer tok = TextTokenizer::Build({"lift the red cube"});
  const testutil::TestDir tmp;
  const std::string dir = tmp.File("ckpt");
  ASSERT_TRUE(SaveCheckpoint(dir, net, tok, 42).ok());
  absl::StatusOr<LoadedCheckpoint> c = LoadCheckpoint(dir);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->version, 42u);
  EXPECT_EQ(c->tokenizer.words(), tok.words());
  auto a = net->named_parameters(), b = c->net->named_parameters();
  ASSERT_EQ(a.size(), b.size());
  for (const auto& p : a)
    EXPECT_TRUE(torch::equal(p.value(), b[p.key()])) << p.key();
  PolicyInput in = MakeInput({2, 4}, 16);
  EXPECT_TRUE(torch::equal(net->forward(in, false).logits,
                           c->net->forward(in, false).logits));
}

TEST(Checkpoint, MalformedCheckpointsNameTheProblem) {
  torch::manual_seed(5);
  TinyVLA net(testutil::SmallTinyVLA());
  TextTokenizer tok = TextTokenizer::Build({"open the drawer"});
  const testutil::TestDir tmp;
  const std::string dir = tmp.File("ckpt_bad");
  ASSERT_TRUE(SaveCheckpoint(dir, net, tok, 1).ok());
  // Weights that miss a parameter.
  std::vector<std::pair<std::string, at::Tensor>> partial;
  for (const auto& p : net->named_parameters()) {
    if (p.key() != "value_head.2.bias")
      partial.emplace_back(p.key(), p.value());
  }
  ASSERT_TRUE(WriteSafetensors(dir + "/model.safetensors", partial).ok());
  EXPECT_EQ(LoadCheckpoint(dir).status().message(),
            dir + "/model.safetensors: parameter value_head.2.bias missing");
  std::ofstream(dir + "/model.json") << "{\"format\": \"something else\"}";
  EXPECT_EQ(LoadCheckpoint(dir).status().message(),
            dir + "/model.json: format is not rl-vla3/tinyvla/v1");
  EXPECT_EQ(LoadCheckpoint("/nonexistent").status().code(),
            absl::StatusCode::kNotFound);
}

// The sizes docs/gpu.md documents (policies at scale, "--set" lines): the
// defaults, and the anchor shapes d 512 x 8 layers and d 768 x 14 layers.
TEST(TinyVLA, DocumentedSizesHaveTheirParameterCounts) {
  auto millions = [](const TinyVLAOptions& o) {
    int64_t n = 0;
    for (const at::Tensor& p : TinyVLA(o)->parameters()) n += p.numel();
    return static_cast<double>(n) / 1e6;
  };
  const TinyVLAOptions base = TinyVLAOptions().vocab_size(64).max_text_len(16);
  EXPECT_NEAR(millions(base), 1.44, 0.02);
  EXPECT_NEAR(millions(TinyVLAOptions(base).d_model(512).heads(8).layers(8)),
              29.6, 0.3);
  EXPECT_NEAR(millions(TinyVLAOptions(base).d_model(768).heads(12).layers(14)),
              105.9, 0.5);
}

}  // namespace
}  // namespace rlvla3
