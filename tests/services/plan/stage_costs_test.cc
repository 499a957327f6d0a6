// The stage-cost profile `plan` reads (services/plan/stage_costs.h): what
// bench writes reads back the same; the fits recover known lines; a file
// with a bad, missing or unknown key is refused naming the file and key.
#include "services/plan/stage_costs.h"

#include <gtest/gtest.h>

#include <string>

#include "absl/strings/str_replace.h"

namespace rlvla3 {
namespace {

StageCostProfile Sample() {
  StageCostProfile p;
  p.config = "configs/toy_reach.yaml";
  p.gpus = "CPU only";
  p.cores = 2;
  p.env.workers = 1;
  p.env.envs = 16;
  p.env.backend = "none";
  p.env.step_s_mean = 2e-5;
  p.env.step_s_cv = 0.4;
  p.env.step_s_p50 = 1.8e-5;
  p.env.step_s_p99 = 6e-5;
  p.env.host_bytes_per_env = 4096;
  p.inference.by_batch = {{1, 0.0011}, {8, 0.0018}, {16, 0.0026}};
  p.learner.micro_batch = 64;
  p.learner.by_samples = {{64, 0.05}, {128, 0.09}};
  p.allreduce.by_bytes = {{1e6, 0.002}, {4e6, 0.005}};
  p.policy.parameters = 123456;
  p.policy.checkpoint_bytes = 500000;
  p.policy.optimizer_bytes = 987648;
  p.wire.observation_cpu_s = 3.5e-4;
  p.wire.observation_wait_s = 1.5e-4;
  p.wire.sample_cpu_s = 2e-6;
  p.wire.weights_cpu_s = 4e-3;
  return p;
}

TEST(StageCosts, WhatBenchWritesReadsBackTheSame) {
  const std::string text = StageCostsJson(Sample());
  absl::StatusOr<StageCostProfile> back = ParseStageCosts(text, "c.json");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(StageCostsJson(*back), text);
  EXPECT_EQ(back->inference.by_batch.size(), 3u);
  EXPECT_EQ(back->policy.parameters, 123456);
}

// A profile from before the wire was measured: no wire costs, not refused.
TEST(StageCosts, AProfileWithoutTheWireReadsAsNoWire) {
  std::string text = StageCostsJson(Sample());
  // The last key (nlohmann sorts them): from the comma before it to its }.
  const size_t from = text.rfind(',', text.find("\"wire\": {"));
  ASSERT_NE(from, std::string::npos);
  text.erase(from, text.find('}', from) + 1 - from);
  ASSERT_EQ(text.find("cpu_s"), std::string::npos);
  absl::StatusOr<StageCostProfile> p = ParseStageCosts(text, "c.json");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->wire.observation_cpu_s, 0);
  EXPECT_EQ(p->wire.weights_cpu_s, 0);
}

TEST(StageCosts, FitsRecoverAKnownLineAndNeverGoNegative) {
  const LinearFit f = FitLine({{1, 0.003}, {2, 0.005}, {4, 0.009}});
  EXPECT_NEAR(f.fixed, 0.001, 1e-12);
  EXPECT_NEAR(f.slope, 0.002, 1e-12);
  // Falling with size (noise): no negative slope, the mean instead.
  const LinearFit g = FitLine({{1, 0.010}, {8, 0.008}});
  EXPECT_EQ(g.slope, 0);
  EXPECT_NEAR(g.fixed, 0.009, 1e-12);
  // One point: all of it per unit.
  const LinearFit h = FitLine({{16, 0.032}});
  EXPECT_EQ(h.fixed, 0);
  EXPECT_NEAR(h.slope, 0.002, 1e-12);
  // A negative intercept: through the origin.
  const LinearFit k = FitLine({{10, 0.001}, {20, 0.003}});
  EXPECT_EQ(k.fixed, 0);
  EXPECT_GT(k.slope, 0);
}

void ExpectRefused(const std::string& from, const std::string& to,
                   const std::string& names) {
  const std::string text =
      absl::StrReplaceAll(StageCostsJson(Sample()), {{from, to}});
  ASSERT_NE(text, StageCostsJson(Sample())) << from;
  absl::StatusOr<StageCostProfile> p = ParseStageCosts(text, "c.json");
  ASSERT_FALSE(p.ok()) << to;
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(p.status().message().find("c.json: " + names), std::string::npos)
      << p.status().message();
}

TEST(StageCosts, ABadMissingOrUnknownKeyIsRefusedNamingIt) {
  ExpectRefused("\"step_s_mean\": 2e-05", "\"step_s_mean\": -1",
                "env.step_s_mean");
  ExpectRefused("\"step_s_mean\": 2e-05", "\"step_s_mean\": \"2\"",
                "env.step_s_mean");
  ExpectRefused("\"step_s_mean\": 2e-05", "\"step_s_mean\": 1e400",
                "");  // not JSON at all
  ExpectRefused("\"step_s_mean\": 2e-05,", "", "env.step_s_mean: missing");
  ExpectRefused("\"step_s_mean\"", "\"step_s_maen\"", "env.step_s_maen");
  ExpectRefused("\"workers\": 1", "\"workers\": 1.5", "env.workers");
  ExpectRefused("\"parameters\": 123456", "\"parameters\": 0",
                "policy.parameters");
  // Points: increasing sizes, positive seconds.
  ExpectRefused("8.0,", "0.5,", "inference.by_batch");
  ExpectRefused("0.0026", "0.0", "inference.by_batch");
  ExpectRefused("rl-vla3 stage costs 1", "rl-vla3 stage costs 9", "format");
  ExpectRefused("\"weights_cpu_s\": 0.004", "\"weights_cpu_s\": -0.004",
                "wire.weights_cpu_s");
  ExpectRefused("\"weights_cpu_s\"", "\"weight_cpu_s\"", "wire.weight_cpu_s");
  absl::StatusOr<StageCostProfile> p = ParseStageCosts("[1, 2]", "c.json");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("c.json: not a JSON object"),
            std::string::npos);
}

TEST(StageCosts, AFolderOrADeviceIsRefusedBeforeAByteIsRead) {
  for (const char* path : {"/tmp", "/dev/zero"}) {
    absl::StatusOr<StageCostProfile> p = ReadStageCosts(path);
    ASSERT_FALSE(p.ok()) << path;
    EXPECT_NE(p.status().message().find(path), std::string::npos);
  }
}

}  // namespace
}  // namespace rlvla3
