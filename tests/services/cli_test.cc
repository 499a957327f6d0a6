// Runs the real rl-vla3 binary and checks exit codes and messages.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <string>

namespace {

struct Result {
  int exit_code;
  std::string output;  // stdout and stderr together
};

Result RunCli(const std::string& args) {
  const std::string cmd = std::string(RLVLA3_BINARY) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  Result r{-1, ""};
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0)
    r.output.append(buf.data(), n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

TEST(Cli, BadConfigValueExits2WithOneLine) {
  const std::string path = testing::TempDir() + "/bad.yaml";
  std::ofstream(path) << "batcher:\n  max_batch: -3\n";
  Result r = RunCli("config --config " + path);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(
      r.output,
      "rl-vla3: config error: " + path +
          ": batcher.max_batch = \"-3\": expected an integer in [1, 4096]\n");
}

TEST(Cli, ConfigPrintsResolvedValues) {
  Result r = RunCli("config --config " RLVLA3_SOURCE_DIR
                    "/configs/selfcheck.yaml --set run.seed=99");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("  seed: 99"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("max_batch:"), std::string::npos);
}

TEST(Cli, UnknownVerbAndFlagExit2) {
  EXPECT_EQ(RunCli("fly").exit_code, 2);
  EXPECT_EQ(RunCli("config --bogus").exit_code, 2);
  EXPECT_EQ(RunCli("config --set").exit_code, 2);
  EXPECT_EQ(RunCli("").exit_code, 2);
  EXPECT_EQ(RunCli("help").exit_code, 0);
}

TEST(Cli, SelfCheckRunsEndToEnd) {
  Result r = RunCli(
      "selfcheck --set selfcheck.num_envs=4 --set selfcheck.steps_per_env=20 "
      "--set metrics.progress=off");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(
      r.output.find(
          "self-check PASSED: 4 envs submitted 80 observations, 80 replies"),
      std::string::npos)
      << r.output;
}

TEST(Cli, RenderWritesBothCamerasAndRejectsBadFlags) {
  const std::string out = testing::TempDir() + "/cli_frame.png";
  Result r = RunCli("render --task open_the_drawer --init 3 --out " + out +
                    " --set env.image_width=48 --set env.image_height=48");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  for (const std::string suffix : {".png", "_agentview.png", "_wrist.png"}) {
    const std::string path =
        out.substr(0, out.size() - 4) + (suffix == ".png" ? ".png" : suffix);
    std::ifstream in(path, std::ios::binary);
    EXPECT_TRUE(in.good()) << path;
  }
  EXPECT_EQ(RunCli("render --task open_the_drawer --init abc").exit_code, 2);
  EXPECT_EQ(RunCli("render --init 1").exit_code, 2);
  EXPECT_EQ(RunCli("render --task juggle").exit_code, 2);
  EXPECT_EQ(RunCli("eval").exit_code, 2);
  EXPECT_EQ(RunCli("eval --checkpoint /nonexistent").exit_code, 2);
}

}  // namespace
