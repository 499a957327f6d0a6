// Runs the real rl-vla3 binary and checks exit codes and messages.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>

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
  Result bad_actions = RunCli("eval --checkpoint /nonexistent --actions best");
  EXPECT_EQ(bad_actions.exit_code, 2);
  EXPECT_NE(bad_actions.output.find("--actions must be greedy or sampled"),
            std::string::npos)
      << bad_actions.output;
}

TEST(Cli, TrainRejectsBadRlConfig) {
  Result r = RunCli("train --set rl.algorithm=dqn");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("rl.algorithm"), std::string::npos) << r.output;
  EXPECT_EQ(RunCli("train --mode lockstep").exit_code, 2);
  EXPECT_EQ(
      RunCli("train --set env.num_envs=6 --set rl.algorithm=grpo").exit_code,
      2);
}

// SIGINT drains every stage, writes the final checkpoint and exits 0.
TEST(Cli, TrainStopsCleanlyOnSigint) {
  const std::string out = testing::TempDir() + "/sigint_runs";
  const std::string log = testing::TempDir() + "/sigint.log";
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    FILE* f = freopen(log.c_str(), "w", stdout);
    (void)f;
    dup2(fileno(stdout), fileno(stderr));
    execl(RLVLA3_BINARY, RLVLA3_BINARY, "train", "--set",
          "env.tasks=lift_the_red_cube", "--set", "env.num_envs=4", "--set",
          "env.image_width=32", "--set", "env.image_height=32", "--set",
          "rl.duration_s=600", "--set", "rl.rollout_len=4", "--set",
          "metrics.progress=plain", "--set", "metrics.interval_s=0.5", "--set",
          ("run.out_dir=" + out).c_str(), "--set", "run.name=sigint",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  // Wait until the engine reports progress, then interrupt it.
  bool running = false;
  for (int i = 0; i < 600 && !running; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::ifstream in(log);
    std::string text((std::istreambuf_iterator<char>(in)),
                     std::istreambuf_iterator<char>());
    running = text.find("frames/s") != std::string::npos;
  }
  ASSERT_TRUE(running);
  const auto t0 = std::chrono::steady_clock::now();
  kill(pid, SIGINT);
  int status = 0;
  pid_t done = 0;
  while ((done = waitpid(pid, &status, WNOHANG)) == 0 &&
         std::chrono::steady_clock::now() - t0 < std::chrono::seconds(30)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (done == 0) kill(pid, SIGKILL);
  ASSERT_EQ(done, pid) << "train did not exit within 30 s of SIGINT";
  const double stop_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  std::ifstream in(log);
  std::string text((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  ASSERT_TRUE(WIFEXITED(status)) << text;
  EXPECT_EQ(WEXITSTATUS(status), 0) << text;
  EXPECT_LT(stop_s, 10.0) << text;
  EXPECT_NE(text.find("(interrupted)"), std::string::npos) << text;
  std::ifstream ckpt(out + "/sigint/checkpoints/final/model.safetensors");
  EXPECT_TRUE(ckpt.good());
  std::ifstream report(out + "/sigint/report.html");
  EXPECT_TRUE(report.good());
}

}  // namespace
