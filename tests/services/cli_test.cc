// Runs the real rl-vla3 binary and checks exit codes and messages.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tests/services/run_command.h"
#include "tests/test_dir.h"

namespace {

using Result = rlvla3::testutil::CommandResult;

Result RunCli(const std::string& args) {
  return rlvla3::testutil::RunCommand(std::string(RLVLA3_BINARY) + " " + args);
}

TEST(Cli, BadConfigValueExits2WithOneLine) {
  const rlvla3::testutil::TestDir dir;
  const std::string path = dir.File("bad.yaml");
  std::ofstream(path) << "batcher:\n  max_batch: -3\n";
  Result r = RunCli("config --config " + path);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(
      r.output,
      "rl-vla3: config error: " + path +
          ": batcher.max_batch = \"-3\": expected an integer in [1, 4096]\n");
}

TEST(Cli, ServeRefusesThePlaintextTokenOffLoopbackUnlessAllowed) {
  const rlvla3::testutil::TestDir dir;
  std::ofstream(dir.File("token")) << "cli-test-token\n";
  const std::string token = " --set cluster.token_file=" + dir.File("token");
  Result r = RunCli("serve learner --listen 0.0.0.0:0 --duration 1" + token);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("cluster.allow_plaintext_token"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("cluster.tls_cert"), std::string::npos) << r.output;
  // A TLS file set alone names the missing key.
  r = RunCli("serve learner --duration 1 --set cluster.tls_cert=" +
             dir.File("token"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("cluster.tls_"), std::string::npos) << r.output;
}

TEST(Cli, ConfigPrintsResolvedValues) {
  Result r = RunCli("config --config " RLVLA3_SOURCE_DIR
                    "/configs/selfcheck.yaml --set run.seed=99");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("  seed: 99"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("max_batch:"), std::string::npos);
}

// `config` checks what a run checks at start that needs no env (issue 60):
// the tasks resolve, sft.demos' files are read and fitted to the run (the
// old verb printed the config and exited 0; the run then failed at start
// with 1), exit 2 naming the key and the file.
TEST(Cli, ConfigChecksWhatARunReadsAtStart) {
  const rlvla3::testutil::TestDir dir;
  std::ofstream(dir.File("text.hdf5")) << "not hdf5\n";
  Result r =
      RunCli("config --set sft.tasks=lift_the_red_cube --set sft.demos=" +
             dir.File("text.hdf5"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("config error: sft.demos: " + dir.File("text.hdf5") +
                          ": not an HDF5 file"),
            std::string::npos)
      << r.output;
  // `sft` itself refuses the file the same way: the user's input, exit 2
  // (it exited 1, as for a failure a restart could mend).
  r = RunCli("sft --set sft.tasks=lift_the_red_cube --set run.out_dir=" +
             dir.File("runs") + " --set sft.demos=" + dir.File("text.hdf5"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("config error: sft.demos: " + dir.File("text.hdf5") +
                          ": not an HDF5 file"),
            std::string::npos)
      << r.output;
  // A task that does not resolve, or a task file that is a device.
  for (const std::string tasks : {"nope", "/dev/zero"}) {
    r = RunCli("config --set env.tasks=" + tasks);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("config error: env.tasks: "), std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find(tasks), std::string::npos) << r.output;
  }
  // A key given with --set is named as --set, not as a config file.
  std::ofstream(dir.File("p.pt")) << "not a module\n";
  r = RunCli("config --set policy.kind=torchscript --set policy.path=" +
             dir.File("p.pt"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(
      r.output.find("config error: --set: policy.path = \"" + dir.File("p.pt")),
      std::string::npos)
      << r.output;
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
  const rlvla3::testutil::TestDir dir;
  const std::string out = dir.File("cli_frame.png");
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
  for (const std::string t : {"0", "-1", "warm"}) {
    Result bad = RunCli(
        "eval --checkpoint /nonexistent --actions sampled "
        "--temperature " +
        t);
    EXPECT_EQ(bad.exit_code, 2) << t;
    EXPECT_NE(bad.output.find("--temperature expects a number > 0"),
              std::string::npos)
        << bad.output;
  }
  // A temperature means nothing to greedy actions: refused, not ignored.
  EXPECT_EQ(
      RunCli("eval --checkpoint /nonexistent --temperature 0.6").exit_code, 2);
  // A range that is not named, one with a first state of its own, or more
  // episodes than it holds: refused, naming the flag.
  for (const std::string r : {"--range train", "--range test --first-init 5",
                              "--range validation --episodes 551"}) {
    Result bad = RunCli("eval --checkpoint /nonexistent " + r);
    EXPECT_EQ(bad.exit_code, 2) << r;
    EXPECT_NE(bad.output.find("--range"), std::string::npos) << bad.output;
  }
}

// `bench --env-workers`: the env stage alone at each worker count, a row
// and a JSON point per count; a bad list exits 2.
TEST(Cli, BenchEnvWorkersMeasuresTheEnvStageByWorkerCount) {
  const rlvla3::testutil::TestDir dir;
  const std::string json = dir.File("scaling.json");
  Result r = RunCli(
      "bench --env-workers 1,2 --envs-per-worker 2 --duration 1 "
      "--set env.image_width=32 --set env.image_height=32 "
      "--set env.render_backend=mesa --set run.out_dir=" +
      dir.path() + " --json " + json);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("workers  envs  exec  backend  readback"),
            std::string::npos)
      << r.output;
  std::ifstream in(json);
  const std::string text((std::istreambuf_iterator<char>(in)),
                         std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("{\"workers\": 1, \"envs\": 2, \"execute_steps\": 1, "
                      "\"backend\": \"mesa\", \"readback\": \"per_image\""),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("{\"workers\": 2, \"envs\": 4,"), std::string::npos)
      << text;
  // Images as the run draws them (rl.execute_steps 4): a second point each.
  EXPECT_NE(text.find("{\"workers\": 2, \"envs\": 4, \"execute_steps\": 4,"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("\"frames_per_s\": 0.000"), std::string::npos) << text;
  EXPECT_EQ(RunCli("bench --env-workers 1,x").exit_code, 2);
  EXPECT_EQ(RunCli("bench --env-workers 0").exit_code, 2);
  EXPECT_EQ(RunCli("bench --env-workers 1 --envs-per-worker 0").exit_code, 2);
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

TEST(Cli, ADeviceThisMachineLacksExits2NamingTheKey) {
  // No machine has 1024 GPUs: refused before anything starts, on a GPU
  // machine as here. (Where there is no GPU at all, plain "cuda" is too.)
  for (const char* key : {"inference.device", "learner.device"}) {
    const rlvla3::testutil::TestDir dir;
    Result r = RunCli(std::string("train --set run.out_dir=") + dir.path() +
                      " --set " + key + "=cuda:1023");
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find(std::string(key) + " = \"cuda:1023\""),
              std::string::npos)
        << r.output;
    EXPECT_TRUE(std::filesystem::is_empty(dir.path()))
        << "a run folder was made";
  }
  Result r = RunCli("train --set learner.device=gpu");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("learner.device = \"gpu\": expected cpu, cuda or "
                          "cuda:N"),
            std::string::npos)
      << r.output;
}

// Starts `rl-vla3 train` with `sets` (key=value) in a child process whose
// stdout and stderr go to `log` (truncated first); -1 when `log` cannot be
// created.
pid_t SpawnTrain(const std::vector<std::string>& sets, const std::string& log) {
  std::vector<std::string> args = {RLVLA3_BINARY, "train"};
  for (const std::string& kv : sets) {
    args.push_back("--set");
    args.push_back(kv);
  }
  // The log is created empty here, before the child exists, so the caller's
  // polling can only ever see what this child writes.
  const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return -1;
  const pid_t pid = fork();
  if (pid == 0) {
    if (dup2(fd, STDOUT_FILENO) < 0 || dup2(fd, STDERR_FILENO) < 0) _exit(126);
    close(fd);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(RLVLA3_BINARY, argv.data());
    _exit(127);
  }
  close(fd);
  return pid;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)),
                     std::istreambuf_iterator<char>());
}

// Polls `log` every `poll` until it contains `text`; false after 60 s.
bool WaitForText(const std::string& log, const std::string& text,
                 std::chrono::milliseconds poll) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    if (ReadAll(log).find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(poll);
  }
  return false;
}

// Waits up to 30 s for `pid`; kills it after that. The exit status, or
// nullopt when it had to be killed.
std::optional<int> WaitExit(pid_t pid) {
  const auto t0 = std::chrono::steady_clock::now();
  int status = 0;
  pid_t done = 0;
  while ((done = waitpid(pid, &status, WNOHANG)) == 0 &&
         std::chrono::steady_clock::now() - t0 < std::chrono::seconds(30)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (done != pid) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return std::nullopt;
  }
  return status;
}

std::vector<std::string> SmallTrain(const std::string& out,
                                    const std::string& name) {
  return {"env.tasks=lift_the_red_cube", "env.num_envs=4",
          "env.image_width=32",          "env.image_height=32",
          "rl.duration_s=600",           "rl.rollout_len=4",
          "metrics.progress=plain",      "metrics.interval_s=0.5",
          "run.out_dir=" + out,          "run.name=" + name};
}

// SIGINT drains every stage, writes the final checkpoint and exits 0.
TEST(Cli, TrainStopsCleanlyOnSigint) {
  const rlvla3::testutil::TestDir dir;
  const std::string out = dir.File("runs");
  const std::string log = dir.File("sigint.log");
  const pid_t pid = SpawnTrain(SmallTrain(out, "sigint"), log);
  ASSERT_GE(pid, 0);
  // Wait until the engine reports progress, then interrupt it.
  ASSERT_TRUE(WaitForText(log, "frames/s", std::chrono::milliseconds(100)));
  const auto t0 = std::chrono::steady_clock::now();
  kill(pid, SIGINT);
  const std::optional<int> status = WaitExit(pid);
  const double stop_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  const std::string text = ReadAll(log);
  ASSERT_TRUE(status.has_value()) << "train did not exit within 30 s of SIGINT";
  ASSERT_TRUE(WIFEXITED(*status)) << text;
  EXPECT_EQ(WEXITSTATUS(*status), 0) << text;
  EXPECT_LT(stop_s, 10.0) << text;
  EXPECT_NE(text.find("(interrupted)"), std::string::npos) << text;
  std::ifstream ckpt(out + "/sigint/checkpoints/final/model.safetensors");
  EXPECT_TRUE(ckpt.good());
  std::ifstream report(out + "/sigint/report.html");
  EXPECT_TRUE(report.good());
}

// A metrics file that cannot be written (a full disk: here metrics.jsonl is a
// link to /dev/full) stops the run with exit 1, naming the file and reason.
TEST(Cli, TrainStopsWhenItsMetricsCannotBeWritten) {
  const rlvla3::testutil::TestDir dir;
  const std::string out = dir.File("runs");
  std::filesystem::create_directories(out + "/full");
  std::filesystem::create_symlink("/dev/full", out + "/full/metrics.jsonl");
  const std::string log = dir.File("full.log");
  const pid_t pid = SpawnTrain(SmallTrain(out, "full"), log);
  ASSERT_GE(pid, 0);
  const std::optional<int> status = WaitExit(pid);
  const std::string text = ReadAll(log);
  ASSERT_TRUE(status.has_value()) << "still running 30 s after start\n" << text;
  ASSERT_TRUE(WIFEXITED(*status)) << text;
  EXPECT_EQ(WEXITSTATUS(*status), 1) << text;
  EXPECT_NE(text.find(out + "/full/metrics.jsonl: write failed: No space left "
                            "on device"),
            std::string::npos)
      << text;
}

// A SIGINT while train is still starting (loading its init checkpoint,
// building the env pool) is not lost: the run stops as soon as it starts.
TEST(Cli, SigintDuringStartUpStillStopsTheRun) {
  const rlvla3::testutil::TestDir dir;
  const std::string out = dir.File("runs");
  const std::string log = dir.File("startup.log");
  std::vector<std::string> first = SmallTrain(out, "first");
  first.push_back("rl.max_steps=1");
  const pid_t seed_run = SpawnTrain(first, log);
  ASSERT_GE(seed_run, 0);
  const std::optional<int> seeded = WaitExit(seed_run);
  ASSERT_TRUE(seeded.has_value() && WIFEXITED(*seeded) &&
              WEXITSTATUS(*seeded) == 0)
      << ReadAll(log);

  std::vector<std::string> second = SmallTrain(out, "second");
  second.push_back("rl.init_checkpoint=" + out + "/first/checkpoints/final");
  const pid_t pid = SpawnTrain(second, log);
  ASSERT_GE(pid, 0);
  // The line comes from loading the checkpoint, before the engine exists.
  ASSERT_TRUE(
      WaitForText(log, "train: starting from", std::chrono::milliseconds(2)));
  kill(pid, SIGINT);
  const std::optional<int> status = WaitExit(pid);
  const std::string text = ReadAll(log);
  ASSERT_TRUE(status.has_value())
      << "a SIGINT during start-up was lost: still running after 30 s\n"
      << text;
  ASSERT_TRUE(WIFEXITED(*status)) << text;
  EXPECT_EQ(WEXITSTATUS(*status), 0) << text;
  EXPECT_NE(text.find("(interrupted)"), std::string::npos) << text;
}

// Every verb answers --help with its own usage and flags, and exits 0.
TEST(Cli, EveryVerbHasItsOwnHelp) {
  const std::vector<std::pair<std::string, std::string>> verbs = {
      {"config", "--set KEY=VALUE"}, {"selfcheck", "--config FILE"},
      {"render", "--task"},          {"rollout-video", "--policy"},
      {"expert-eval", "--episodes"}, {"sft", "checkpoint"},
      {"eval", "--first-init"},      {"train", "--init-checkpoint"},
      {"bench", "--duration"},       {"version", "-h, --help"}};
  for (const auto& [verb, flag] : verbs) {
    const Result r = RunCli(verb + " --help");
    EXPECT_EQ(r.exit_code, 0) << verb << "\n" << r.output;
    EXPECT_NE(r.output.find("usage: rl-vla3 " + verb), std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find(flag), std::string::npos)
        << verb << ": " << r.output;
  }
  EXPECT_EQ(RunCli("eval -h").exit_code, 0);
  // --help after other flags too, and an unknown verb still fails.
  EXPECT_EQ(RunCli("train --mode sync --help").exit_code, 0);
  EXPECT_EQ(RunCli("frobnicate --help").exit_code, 2);
}

// A policy that declares a shape the run cannot give is refused before
// anything starts, exit 2, naming both sides: a camera the tasks' scenes do
// not have, a 6-D action for a 7-D controller, an image size against a
// given env.image_width (issue 50).
TEST(Cli, ADeclaredShapeTheRunCannotGiveExits2NamingBothSides) {
  if (std::string(RLVLA3_PYTHON).empty()) GTEST_SKIP() << "no python3 torch";
  const rlvla3::testutil::TestDir dir;
  const std::string camera =
      R"({"name": "agentview", "height": 32, "width": 32})";
  auto declaration = [&](const std::string& cameras, int size) {
    return R"({"format": "rl-vla3/interface/v1", "cameras": [)" + cameras +
           R"(], "proprio": 8, "action": {"kind": "gaussian", "size": )" +
           std::to_string(size) + R"(, "low": -1, "high": 1}, "chunk": 4})";
  };
  const std::string side = R"(, {"name": "wrist", "height": 32, "width": 32}, )"
                           R"({"name": "side", "height": 32, "width": 32})";
  const struct {
    std::string name, declared, set, message;
  } cases[] = {
      {"three", declaration(camera + side, 7), "",
       "env.cameras = \"agentview,wrist,side\": expected cameras every "
       "task's scene has: task "},
      {"six", declaration(camera, 6), "",
       ": action.size = \"6\": expected 7, the envs' controller"},
      {"size", declaration(camera, 7), " --set env.image_width=64",
       "--set: env.image_width = \"64\": expected 32, the cameras[0].width "
       "policy "},
  };
  for (const auto& k : cases) {
    const std::string pt = dir.File(k.name + ".pt");
    const std::string cmd = std::string(RLVLA3_PYTHON) + " " +
                            RLVLA3_SOURCE_DIR +
                            "/scripts/export_torchscript_policy.py " + pt +
                            " --declare '" + k.declared + "' > /dev/null";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    const Result r = RunCli(
        "train --set policy.kind=torchscript --set "
        "policy.path=" +
        pt + k.set);
    EXPECT_EQ(r.exit_code, 2) << k.name << ": " << r.output;
    EXPECT_NE(r.output.find(k.message), std::string::npos)
        << k.name << ": " << r.output;
  }
}

}  // namespace
