// `bench --profile`: the stages alone under LibTorch's profiler, written as a
// Chrome trace that holds both stages' events, with per-batch counts.
#include "services/runs/bench_profile.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "services/options/engine_config.h"
#include "tests/test_dir.h"

namespace rlvla3 {
namespace {

TEST(BenchProfile, TracesBothStagesIntoAChromeTraceAndCountsTheirOps) {
  const testutil::TestDir t;
  Config c;
  c.env.num_envs = 2;
  c.env.image_width = c.env.image_height = 32;
  c.rl.rollout_len = 4;
  c.rl.micro_batch = 8;
  c.batcher.max_batch = 2;
  absl::StatusOr<EngineParts> parts = BuildEngineParts(c);
  ASSERT_TRUE(parts.ok()) << parts.status();
  absl::StatusOr<LocalEngineOptions> o =
      LocalEngineOptionsFromConfig(c, *parts);
  ASSERT_TRUE(o.ok()) << o.status();
  const std::string path = t.File("trace.json");
  absl::StatusOr<ProfileFigures> p =
      ProfileStages(*o, *parts, path, /*batches=*/2, /*steps=*/1);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_GT(p->inference_ops_per_batch, 10);
  EXPECT_GT(p->learner_ops_per_step, p->inference_ops_per_batch);
  EXPECT_EQ(p->inference_kernels_per_batch, -1);  // on the CPU
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  const nlohmann::json trace = nlohmann::json::parse(text.str());
  std::set<int> rows;
  std::set<std::string> names;
  int complete = 0;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.at("ph") != "X") continue;
    ++complete;
    rows.insert(e.at("pid").get<int>());
    names.insert(e.at("name").get<std::string>());
    EXPECT_GE(e.at("dur").get<double>(), 0);
  }
  EXPECT_EQ(rows, (std::set<int>{0, 1}));
  EXPECT_EQ(complete, static_cast<int>(2 * p->inference_ops_per_batch +
                                       p->learner_ops_per_step));
  EXPECT_TRUE(names.count("aten::addmm") || names.count("aten::linear"));
  EXPECT_NE(FormatProfile(*p).find(path), std::string::npos);
}

}  // namespace
}  // namespace rlvla3
