// `rl-vla3 plan` and `bench --stage-costs` through the real binary: a plan
// for this machine from a profile on record, its forecast of the config's
// own split as JSON, and every misuse an exit 2 naming the flag, the file or
// the key (no silent surprises: a flag the plan would not honour is refused).
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

#include "tests/services/run_command.h"
#include "tests/test_dir.h"

namespace {

using Result = rlvla3::testutil::CommandResult;

Result Plan(const std::string& args) {
  return rlvla3::testutil::RunCommand(
      std::string(RLVLA3_BINARY) +
      " plan --config " RLVLA3_SOURCE_DIR
      "/configs/bench_node.yaml --stage-costs " RLVLA3_SOURCE_DIR
      "/configs/stage_costs/h200_bench_node.json --seconds 10 " +
      args);
}

TEST(PlanCli, AOneGpuNodesPlanAndItsOwnSplitsForecast) {
  Result r = Plan("--cores 16 --gpus 1 --gpu-memory 143");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("recommended: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("async / sync"), std::string::npos);
  EXPECT_NE(r.output.find("learner rank"), std::string::npos);
  const rlvla3::testutil::TestDir dir;
  const std::string json = dir.path() + "/f.json";
  r = Plan("--cores 16 --gpus 1 --gpu-memory 143 --forecast processes --json " +
           json);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream in(json);
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  // bench_node.yaml: 4 rollout workers x 16 envs, 2 actors on one server.
  EXPECT_NE(text.find("\"rollout_workers\": 4, \"envs_per_worker\": 16"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\"async\": {\"frames_per_s\": "), std::string::npos);
}

TEST(PlanCli, MisuseExits2NamingTheFlagFileOrKey) {
  const rlvla3::testutil::TestDir dir;
  const std::string bad = dir.path() + "/bad.json";
  std::ofstream(bad)
      << "{\"format\": \"rl-vla3 stage costs 1\", \"cores\": -1}";
  Result r = rlvla3::testutil::RunCommand(std::string(RLVLA3_BINARY) +
                                          " plan --stage-costs " + bad);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(bad + ": cores"), std::string::npos) << r.output;
  r = rlvla3::testutil::RunCommand(std::string(RLVLA3_BINARY) + " plan");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("--stage-costs"), std::string::npos);
  struct Case {
    const char* args;
    const char* says;
  };
  for (const Case& c : {
           Case{"--gpus 1", "--gpu-memory"},
           Case{"--table 8,64", "--table needs --gpus"},
           Case{"--gpus 8 --gpu-memory 80 --table 12", "multiples of --gpus"},
           Case{"--forecast later", "--forecast expects"},
           Case{"--forecast train --out x.yaml", "cannot go with it"},
           Case{"--gpus 8 --gpu-memory 80 --table 8 --out x.yaml",
                "give one of them"},
           Case{"--cores 0", "--cores expects"},
           Case{"--nodes 1.5", "--nodes expects a whole number"},
       }) {
    r = Plan(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.says), std::string::npos) << c.args << "\n"
                                                        << r.output;
  }
  r = rlvla3::testutil::RunCommand(
      std::string(RLVLA3_BINARY) +
      " bench --stage-costs x.json --env-workers 1,2");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--env-workers cannot go with it"), std::string::npos)
      << r.output;
}

}  // namespace
