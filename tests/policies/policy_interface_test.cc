// A policy's declared interface (issue 50, item 1): parsed from its JSON,
// refused naming the origin and the field when a shape is out of range (no
// camera, more than 8, a camera named twice, bins out of range, a list whose
// length is not the action size, an empty range, a SentencePiece tokenizer
// without its model), and written back to the same declaration; TinyVLA's
// own is today's fixed shape.
#include "policies/policy_interface.h"

#include <gtest/gtest.h>

#include <string>

#include "envs/sim_env.h"

namespace rlvla3 {
namespace {

// One camera, a SentencePiece prompt, 256 bins (an OpenVLA-style policy).
constexpr char kOneCamera[] = R"({
  "format": "rl-vla3/interface/v1",
  "cameras": [{"name": "agentview", "height": 224, "width": 224}],
  "proprio": 0,
  "action": {"kind": "bins", "size": 7, "bins": 256, "low": -1, "high": 1},
  "chunk": 1,
  "instruction": {"tokenizer": "sentencepiece", "model": "tok.model",
                  "max_len": 32}})";

// Three cameras and a continuous chunk of 8 (an Octo-style policy).
constexpr char kThreeCameras[] = R"({
  "format": "rl-vla3/interface/v1",
  "cameras": [{"name": "agentview", "height": 128, "width": 128},
              {"name": "wrist", "height": 96, "width": 96},
              {"name": "side", "height": 96, "width": 128}],
  "proprio": 9,
  "action": {"kind": "gaussian", "size": 7,
             "low": [-1, -1, -1, -0.5, -0.5, -0.5, -1], "high": 1},
  "chunk": 8,
  "instruction": {"tokenizer": "bytes", "max_len": 64}})";

std::string Replace(std::string s, const std::string& from,
                    const std::string& to) {
  const size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

// The error of parsing `text`, or "" if it parsed.
std::string ErrorOf(const std::string& text) {
  const absl::StatusOr<PolicyInterface> p =
      ParsePolicyInterface(text, "my.interface.json");
  if (p.ok()) return "";
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(p.status().message());
}

TEST(PolicyInterface, ParsesBothExampleShapesAndBroadcastsScalars) {
  absl::StatusOr<PolicyInterface> one =
      ParsePolicyInterface(kOneCamera, "one.json");
  ASSERT_TRUE(one.ok()) << one.status();
  ASSERT_EQ(one->cameras.size(), 1u);
  EXPECT_EQ(one->cameras[0].height, 224);
  EXPECT_EQ(one->action.bins, std::vector<int64_t>(7, 256));
  EXPECT_EQ(one->instruction.tokenizer, InstructionKind::kSentencePiece);
  EXPECT_EQ(one->instruction.model, "tok.model");

  absl::StatusOr<PolicyInterface> three =
      ParsePolicyInterface(kThreeCameras, "three.json");
  ASSERT_TRUE(three.ok()) << three.status();
  ASSERT_EQ(three->cameras.size(), 3u);
  EXPECT_EQ(three->cameras[2].name, "side");
  EXPECT_EQ(three->cameras[2].width, 128);
  EXPECT_EQ(three->action.kind, ActionKind::kGaussian);
  EXPECT_TRUE(three->action.bins.empty());
  EXPECT_DOUBLE_EQ(three->action.low[3], -0.5);
  EXPECT_EQ(three->action.high, std::vector<double>(7, 1.0));
  EXPECT_EQ(three->chunk, 8);
  EXPECT_EQ(three->proprio, 9);
}

TEST(PolicyInterface, AShapeOutOfRangeIsRefusedNamingTheOriginAndTheField) {
  const std::string one = kOneCamera;
  struct Case {
    std::string text, field;
  } cases[] = {
      {Replace(one, R"([{"name": "agentview", "height": 224, "width": 224}])",
               "[]"),
       "cameras: 0 (1 to 8)"},
      {Replace(one, R"("bins": 256)",
               R"("bins": [256, 256, 1, 256, 256, 256, 256])"),
       "action.bins[2]: 1 (at least 2)"},
      {Replace(one, R"("bins": 256)", R"("bins": 70000)"),
       "action.bins[0]: 70000 (at most 65536)"},
      {Replace(one, R"("bins": 256)", R"("bins": [256, 256])"),
       "action.bins: 2 values for action.size 7"},
      {Replace(one, R"("size": 7)", R"("size": 0)"), "action.size: 0"},
      {Replace(one, R"("low": -1)", R"("low": 1)"), "action.low/high[0]"},
      {Replace(one, R"("height": 224)", R"("height": 2)"),
       "cameras[0].height: 2 (8 to 1024)"},
      {Replace(one, R"("name": "agentview")", R"("name": "Agent View")"),
       "cameras[0].name"},
      {Replace(one, R"("model": "tok.model",)", ""), "instruction.model"},
      {Replace(one, R"("chunk": 1)", R"("chunk": 65)"), "chunk: 65"},
      {Replace(one, R"("kind": "bins")", R"("kind": "beta")"), "action.kind"},
      {Replace(one, "interface/v1", "interface/v9"), "format"},
  };
  for (const Case& c : cases) {
    const std::string error = ErrorOf(c.text);
    EXPECT_NE(error.find("my.interface.json: "), std::string::npos) << error;
    EXPECT_NE(error.find(c.field), std::string::npos)
        << "expected \"" << c.field << "\" in: " << error;
  }
  const std::string twice =
      Replace(kThreeCameras, R"("name": "side")", R"("name": "wrist")");
  EXPECT_NE(ErrorOf(twice).find("cameras[2].name: \"wrist\" named twice"),
            std::string::npos)
      << ErrorOf(twice);
  EXPECT_NE(ErrorOf("[1, 2]").find("not a JSON object"), std::string::npos);
}

// Declared numbers are checked, never truncated or wrapped (issue 60): a
// fraction, a float for an integer, NaN or 1e400 (not JSON: the parser's
// own message, with its position), an action range float32 cannot carry.
// On the old parser 64.9 became 64, 1e300 -9223372036854775808, and a range
// of +-1e308 passed, then aborted in LibTorch.
TEST(PolicyInterface, DeclaredNumbersAreIntegralFiniteAndUsable) {
  const std::string one = kOneCamera;
  const std::pair<std::string, std::string> cases[] = {
      {Replace(one, R"("height": 224)", R"("height": 64.9)"),
       "cameras[0].height: 64.9 (an integer)"},
      {Replace(one, R"("height": 224)", R"("height": 1e300)"),
       "cameras[0].height: 1e+300 (an integer)"},
      {Replace(one, R"("chunk": 1)", R"("chunk": 4.7)"),
       "chunk: 4.7 (an integer)"},
      {Replace(one, R"("proprio": 0)", R"("proprio": "8")"),
       "proprio: \"8\" (an integer)"},
      {Replace(one, R"("size": 7)", R"("size": 7.0)"),
       "action.size: 7.0 (an integer)"},
      {Replace(one, R"("bins": 256)",
               R"("bins": [256, 256, 2.5, 256, 256, 256, 256])"),
       "action.bins[2]: 2.5 (an integer)"},
      {Replace(one, R"("max_len": 32)", R"("max_len": 1e9)"),
       "instruction.max_len: 1000000000.0 (an integer)"},
      {Replace(one, R"("low": -1, "high": 1)",
               R"("low": -1e308, "high": 1e308)"),
       "action.low: -1e+308 (a number of magnitude at most"},
      {Replace(one, R"("low": -1, "high": 1)", R"("low": 0, "high": 5e-324)"),
       "action.low/high[0]: [0, 4.94066e-324] (finite, magnitudes at most"},
      {Replace(one, R"("high": 1)", R"("high": NaN)"), "not JSON: "},
      {Replace(one, R"("high": 1)", R"("high": 1e400)"), "not JSON: "},
  };
  for (const auto& [text, field] : cases) {
    const std::string error = ErrorOf(text);
    EXPECT_NE(error.find("my.interface.json: " + field), std::string::npos)
        << "expected \"" << field << "\" in: " << error;
  }
}

TEST(PolicyInterface, WritesBackTheSameDeclaration) {
  for (const char* text : {kOneCamera, kThreeCameras}) {
    absl::StatusOr<PolicyInterface> p = ParsePolicyInterface(text, "a");
    ASSERT_TRUE(p.ok()) << p.status();
    absl::StatusOr<PolicyInterface> back =
        ParsePolicyInterface(PolicyInterfaceJson(*p), "b");
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_TRUE(*back == *p) << PolicyInterfaceJson(*back);
  }
}

TEST(PolicyInterface, TinyVlasIsTodaysFixedShape) {
  const PolicyInterface p = TinyVLAInterface(64, 48, /*chunk=*/4, 16);
  EXPECT_TRUE(ValidatePolicyInterface(p, "tiny").ok());
  ASSERT_EQ(p.cameras.size(), 2u);
  EXPECT_EQ(p.cameras[0].name, "agentview");
  EXPECT_EQ(p.cameras[1].name, "wrist");
  EXPECT_EQ(p.cameras[1].height, 64);
  EXPECT_EQ(p.cameras[1].width, 48);
  EXPECT_EQ(p.proprio, kProprioDim);
  EXPECT_EQ(p.action.size, kActionDim);
  EXPECT_EQ(p.action.bins, std::vector<int64_t>(kActionDim, 256));
  EXPECT_EQ(p.instruction.tokenizer, InstructionKind::kWords);
}

}  // namespace
}  // namespace rlvla3
