// A run's config against the interface its policy declares (issue 50, item
// 1): the declaration takes the place of keys not given (image size from its
// cameras, chunk, text length), a given key that contradicts it is a config
// error naming both sides, what the envs cannot give (cameras of different
// sizes, another proprio or action size) is a config error naming the
// declaration's field; the declaration rides in context.json and binds a run
// from the checkpoint the same way; a TorchScript policy's own declaration
// (policy.path) is read at config time.
#include "services/options/interface_fit.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "services/options/checkpoint_fit.h"
#include "tests/test_dir.h"

namespace rlvla3 {
namespace {

constexpr char kOneCamera[] =
    R"({"format": "rl-vla3/interface/v1",
        "cameras": [{"name": "agentview", "height": 48, "width": 40}],
        "proprio": 0,
        "action": {"kind": "bins", "size": 7, "bins": 128, "low": -1,
                   "high": 1},
        "chunk": 8,
        "instruction": {"tokenizer": "bytes", "max_len": 40}})";

PolicyInterface Declared(const std::string& json = kOneCamera) {
  absl::StatusOr<PolicyInterface> p = ParsePolicyInterface(json, "my.json");
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *p : PolicyInterface{};
}

Config Load(const std::vector<std::string>& overrides) {
  absl::StatusOr<Config> c = LoadConfig("", overrides);
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? *c : Config{};
}

std::string Message(const absl::Status& s) { return std::string(s.message()); }

TEST(InterfaceFit, TheDeclarationTakesThePlaceOfKeysNotGiven) {
  Config c = Load({});
  ASSERT_TRUE(FitConfigToInterface(Declared(), "my.json", &c).ok());
  EXPECT_EQ(c.env.image_height, 48);
  EXPECT_EQ(c.env.image_width, 40);
  EXPECT_EQ(c.env.cameras, "agentview");
  EXPECT_EQ(c.policy.chunk, 8);
  EXPECT_EQ(c.policy.max_text_len, 40);
}

TEST(InterfaceFit, AGivenKeyThatContradictsItNamesBothSides) {
  Config c = Load({"env.image_width=64"});
  const absl::Status s = FitConfigToInterface(Declared(), "my.json", &c);
  ASSERT_TRUE(IsConfigError(s)) << s;
  EXPECT_EQ(Message(s),
            "--set: env.image_width = \"64\": expected 40, the "
            "cameras[0].width policy my.json declares; leave the key out to "
            "take it");
  Config chunk = Load({"policy.chunk=4"});
  EXPECT_NE(Message(FitConfigToInterface(Declared(), "my.json", &chunk))
                .find("policy.chunk = \"4\": expected 8"),
            std::string::npos);
  Config cameras = Load({"env.cameras=agentview,wrist"});
  EXPECT_EQ(Message(FitConfigToInterface(Declared(), "my.json", &cameras)),
            "--set: env.cameras = \"agentview,wrist\": expected agentview, "
            "the cameras policy my.json declares, in its order; leave the key "
            "out to take them");
}

TEST(InterfaceFit, AnUndeclaredPolicyReadsAgentviewThenWrist) {
  EXPECT_TRUE(FitConfigToUndeclared(Load({})).ok());
  const absl::Status s =
      FitConfigToUndeclared(Load({"env.cameras=wrist,agentview"}));
  EXPECT_TRUE(IsConfigError(s)) << s;
  EXPECT_NE(Message(s).find("env.cameras = \"wrist,agentview\": expected "
                            "agentview,wrist: TinyVLA"),
            std::string::npos)
      << s;
}

TEST(InterfaceFit, WhatTheEnvsCannotGiveIsRefusedNamingTheField) {
  struct Case {
    std::string from, to, message;
  };
  const Case cases[] = {
      {R"([{"name": "agentview", "height": 48, "width": 40}])",
       R"([{"name": "agentview", "height": 48, "width": 40},
           {"name": "wrist", "height": 32, "width": 32}])",
       "my.json: cameras[1] = \"32x32\": expected 48x40 like cameras[0]: the "
       "envs render every camera at env.image_height x env.image_width"},
      {R"("proprio": 0)", R"("proprio": 9)",
       "my.json: proprio = \"9\": expected 0 (none) or 8, the proprio the "
       "envs give (ee_pos 3, ee_ori 3, gripper_states 2)"},
      {R"("size": 7)", R"("size": 6)",
       "my.json: action.size = \"6\": expected 7, the envs' controller (dx "
       "dy dz, droll dpitch dyaw, gripper)"},
  };
  for (const Case& k : cases) {
    std::string json = kOneCamera;
    ASSERT_NE(json.find(k.from), std::string::npos) << k.from;
    json.replace(json.find(k.from), k.from.size(), k.to);
    Config c = Load({});
    const absl::Status s = FitConfigToInterface(Declared(json), "my.json", &c);
    EXPECT_TRUE(IsConfigError(s)) << s;
    EXPECT_EQ(Message(s), k.message);
  }
}

TEST(InterfaceFit, TheCheckpointsRecordCarriesTheDeclaration) {
  const testutil::TestDir dir;
  CheckpointContext ctx;
  ctx.image_width = 40;
  ctx.image_height = 48;
  ctx.cameras = {"agentview"};
  ctx.chunk = 8;
  ctx.execute_steps = 4;
  ctx.tasks = {"open_the_drawer"};
  ctx.interface = Declared();
  ASSERT_TRUE(WriteCheckpointContext(dir.path(), ctx).ok());
  absl::StatusOr<std::optional<CheckpointContext>> back =
      ReadCheckpointContext(dir.path());
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_TRUE((*back)->interface.has_value());
  EXPECT_EQ(*(*back)->interface, Declared());
  Config c = Load({});
  ASSERT_TRUE(FitConfigToCheckpoint(dir.path(), CheckpointUse::kEval, &c).ok());
  EXPECT_EQ(c.policy.max_text_len, 40);
  Config given = Load({"policy.max_text_len=16"});
  const absl::Status s =
      FitConfigToCheckpoint(dir.path(), CheckpointUse::kEval, &given);
  EXPECT_TRUE(IsConfigError(s)) << s;
  EXPECT_NE(Message(s).find("context.json interface declares"),
            std::string::npos)
      << s;
}

TEST(InterfaceFit, ATorchScriptPolicysOwnDeclarationIsReadAtConfigTime) {
  if (std::string(RLVLA3_PYTHON).empty()) GTEST_SKIP() << "no python3 torch";
  const testutil::TestDir dir;
  const std::string pt = dir.File("p.pt");
  std::string three = kOneCamera;
  const std::string cam = R"({"name": "agentview", "height": 48, "width": 40})";
  three.replace(three.find(cam), cam.size(),
                cam + ", " + R"({"name": "wrist", "height": 48, "width": 40},
                               {"name": "side", "height": 48, "width": 40})");
  const std::string cmd = std::string(RLVLA3_PYTHON) + " " + RLVLA3_SOURCE_DIR +
                          "/scripts/export_torchscript_policy.py " + pt +
                          " --declare '" + three + "' > /dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  Config c = Load({"policy.kind=torchscript", "policy.path=" + pt});
  ASSERT_TRUE(FitConfigToPolicy(&c).ok());
  EXPECT_EQ(c.env.cameras, "agentview,wrist,side");  // the scenes' to give
  EXPECT_EQ(c.env.image_height, 48);
  Config tiny = Load({});
  EXPECT_TRUE(FitConfigToPolicy(&tiny).ok());  // TinyVLA: nothing declared
}

}  // namespace
}  // namespace rlvla3
