// `rl-vla3 up --local` as a user runs it: every role a real process; kill -9
// of a rollout worker leaves the learner and inference running, `up`
// restarts the worker and training goes on; `status` reports every role
// SERVING; `down --local` stops the run with exit code 0. With
// cluster.learner_ranks 2 the learner is a data-parallel group of two
// processes (c10d Gloo) that trains and checkpoints its sharded optimizer
// state; kill -9 of a rank makes `up` restart the whole group, which resumes
// from its newest checkpoint with versions going on above every version
// published, while the rollout workers and the inference server reconnect
// without a restart; a later `up` of the same run on one rank resumes too.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>
#include <thread>

#include "rlvla3/v1/services.grpc.pb.h"
#include "services/net/grpc_common.h"
#include "tests/role_process.h"
#include "tests/test_dir.h"

namespace rlvla3 {
namespace {

using testutil::RoleProcess;

v1::RoleStatus LearnerStatus(const std::string& target) {
  auto stub = v1::Learner::NewStub(MakeChannel(target, NetOptions()).value());
  grpc::ClientContext ctx;
  PrepareContext(&ctx, NetOptions(), absl::Seconds(5));
  v1::RoleStatus st;
  if (!stub->GetStatus(&ctx, v1::StatusRequest(), &st).ok()) return {};
  return st;
}

uint64_t LearnerSteps(const std::string& target) {
  return LearnerStatus(target).optimizer_steps();
}

// Polls the learner at `target` every 300 ms until it has made `steps`
// optimizer steps or `seconds` have passed.
void WaitForSteps(const std::string& target, uint64_t steps, int seconds) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (LearnerSteps(target) < steps &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
}

// `verb` (e.g. {"up", "--local"}) followed by the run's config flags.
std::vector<std::string> Command(std::vector<std::string> verb,
                                 const std::vector<std::string>& config) {
  verb.insert(verb.end(), config.begin(), config.end());
  return verb;
}

// A small run under `up --local` (bench_cpu, 2 envs a worker, one rollout
// per step, 900 s) named `name` in `dir`, its ports from `base`, and `sets`
// (KEY=VALUE) on top.
std::vector<std::string> UpConfig(const testutil::TestDir& dir, int base,
                                  const std::string& name,
                                  const std::vector<std::string>& sets) {
  std::vector<std::string> c = {
      "--config", RLVLA3_SOURCE_DIR "/configs/bench_cpu.yaml",
      "--set",    "env.num_envs=2",
      "--set",    "rl.rollouts_per_step=1",
      "--set",    "rl.duration_s=900",
      "--set",    "cluster.base_port=" + std::to_string(base),
      "--set",    "run.out_dir=" + dir.path(),
      "--set",    "run.name=" + name};
  for (const std::string& kv : sets) c.insert(c.end(), {"--set", kv});
  return c;
}

// The configuration of the two-rank run; its learner ranks start at `base`.
std::vector<std::string> DataParallelConfig(const testutil::TestDir& dir,
                                            int base) {
  return {"--config", RLVLA3_SOURCE_DIR "/configs/bench_cpu.yaml",
          "--set",    "env.num_envs=2",
          "--set",    "rl.rollouts_per_step=1",
          "--set",    "rl.checkpoint_every=2",
          "--set",    "rl.keep_checkpoints=0",
          "--set",    "rl.duration_s=900",
          "--set",    "cluster.rollout_workers=2",
          "--set",    "cluster.learner_ranks=2",
          "--set",    "cluster.collective_timeout_s=20",
          "--set",    "cluster.base_port=" + std::to_string(base),
          "--set",    "run.out_dir=" + dir.path(),
          "--set",    "run.name=dp"};
}

// Both ranks train their share and step together (one collective each), and
// the checkpoint at version 2, `ck`, holds the weights (rank 0) and both
// optimizer shards.
void ExpectRanksTrainTogether(const std::string& rank0,
                              const std::string& rank1, const std::string& ck,
                              const RoleProcess& up) {
  WaitForSteps(rank0, 4, 120);
  const v1::RoleStatus s0 = LearnerStatus(rank0), s1 = LearnerStatus(rank1);
  ASSERT_GE(s0.optimizer_steps(), 4u) << up.Stdout();
  EXPECT_GT(s1.trained_samples(), 0u);
  EXPECT_LE(s0.optimizer_steps() > s1.optimizer_steps()
                ? s0.optimizer_steps() - s1.optimizer_steps()
                : s1.optimizer_steps() - s0.optimizer_steps(),
            1u);
  EXPECT_TRUE(std::ifstream(ck + "/model.safetensors").good()) << ck;
  EXPECT_TRUE(std::ifstream(ck + "/optimizer/shard-0-of-2.pt").good());
  EXPECT_TRUE(std::ifstream(ck + "/optimizer/shard-1-of-2.pt").good());
}

uint64_t LearnerVersion(const std::string& target) {
  return LearnerStatus(target).policy_version();
}

// Polls until the learner at `target` publishes a version above `v`.
bool WaitForVersionAbove(const std::string& target, uint64_t v, int seconds) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (LearnerVersion(target) > v) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  return false;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)),
                     std::istreambuf_iterator<char>());
}

// The last `n` characters of both learner ranks' logs of run `name`: what
// a failed stop shows (the test folder of a CI run is gone).
std::string LearnerLogTails(const testutil::TestDir& dir,
                            const std::string& name, size_t n = 3000) {
  std::string out;
  for (const char* log : {"learner.log", "learner_1.log"}) {
    const std::string text = ReadFile(dir.path() + "/" + name + "/logs/" + log);
    out += "\n--- " + std::string(log) + " (tail) ---\n" +
           text.substr(text.size() > n ? text.size() - n : 0);
  }
  return out;
}

// kill -9 of learner rank 1: `up` stops rank 0 too and restarts both; they
// resume from the newest checkpoint and number above `published`; the
// rollout workers are not restarted (their streams reconnect).
void KillRank1AndExpectTheGroupToResume(RoleProcess& up,
                                        const std::string& rank0,
                                        const testutil::TestDir& dir) {
  std::smatch m;
  const std::string out = up.Stdout();
  ASSERT_TRUE(std::regex_search(
      out, m, std::regex("learner rank 1 serving on [^ ]+ \\(pid ([0-9]+)")))
      << out;
  const uint64_t published = LearnerVersion(rank0);
  ASSERT_EQ(kill(std::stoi(m[1]), SIGKILL), 0);
  ASSERT_TRUE(up.WaitFor("learner rank 1 restarted", 90))
      << up.Stdout() << up.Log();
  EXPECT_NE(up.Log().find("learner rank 1 is gone (signal 9"),
            std::string::npos)
      << up.Log();
  ASSERT_TRUE(WaitForVersionAbove(rank0, published + 1, 120))
      << up.Stdout() << ReadFile(dir.path() + "/dp/logs/learner.log");
  const std::string log = ReadFile(dir.path() + "/dp/logs/learner.log");
  EXPECT_NE(log.find("learner: resuming from"), std::string::npos) << log;
  EXPECT_NE(log.find("training state restored from"), std::string::npos);
  EXPECT_EQ(up.Log().find("rollout 0 exited"), std::string::npos) << up.Log();
  EXPECT_EQ(up.Log().find("rollout 1 exited"), std::string::npos) << up.Log();
  EXPECT_TRUE(up.running());
}

// `up_args` with one learner rank, for 60 s: the same run folder, so the
// learner resumes from the group's checkpoint (two optimizer shards).
std::vector<std::string> OneRankArgs(std::vector<std::string> up_args) {
  for (auto& a : up_args) {
    if (a == "cluster.learner_ranks=2") a = "cluster.learner_ranks=1";
  }
  up_args.insert(up_args.end(), {"--duration", "60"});
  return up_args;
}

TEST(UpLocal, KilledRolloutWorkerIsRestartedAndTrainingGoesOn) {
  const testutil::TestDir dir;
  // Below the ephemeral range (32768-60999), where any outgoing connection
  // may hold a port (a CI run once lost a learner port that way).
  const int base = 20000 + static_cast<int>(getpid() % 500) * 8;
  const std::vector<std::string> config =
      UpConfig(dir, base, "up", {"cluster.rollout_workers=2"});
  std::vector<std::string> up_args = {"up", "--local"};
  up_args.insert(up_args.end(), config.begin(), config.end());
  RoleProcess up(RLVLA3_BINARY, up_args, {}, dir.File("up"));
  ASSERT_TRUE(up.WaitFor("roles running", 180)) << up.Stdout() << up.Log();
  const std::string learner = "127.0.0.1:" + std::to_string(base);

  std::smatch m;
  const std::string out = up.Stdout();
  ASSERT_TRUE(std::regex_search(
      out, m, std::regex("rollout 1 serving on [^ ]+ \\(pid ([0-9]+)")))
      << out;
  const pid_t victim = std::stoi(m[1]);
  // Training has started.
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(90);
  while (LearnerSteps(learner) < 2 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  ASSERT_GE(LearnerSteps(learner), 2u) << up.Stdout();

  ASSERT_EQ(kill(victim, SIGKILL), 0);
  ASSERT_TRUE(up.WaitFor("rollout 1 restarted", 60)) << up.Stdout() << up.Log();
  EXPECT_NE(up.Log().find("rollout 1 exited (signal 9"), std::string::npos)
      << up.Log();
  const uint64_t after_restart = LearnerSteps(learner);
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(90);
  while (LearnerSteps(learner) < after_restart + 3 &&
         std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  EXPECT_GE(LearnerSteps(learner), after_restart + 3) << up.Stdout();
  EXPECT_TRUE(up.running());

  // status: every role SERVING (exit 0); down: the run stops cleanly.
  std::vector<std::string> status_args = {"status"};
  status_args.insert(status_args.end(), config.begin(), config.end());
  RoleProcess status(RLVLA3_BINARY, status_args, {}, dir.File("status"));
  EXPECT_EQ(status.Wait(), 0) << status.Stdout() << status.Log();
  EXPECT_NE(status.Stdout().find("SERVING"), std::string::npos);
  std::vector<std::string> down_args = {"down", "--local"};
  down_args.insert(down_args.end(), config.begin(), config.end());
  RoleProcess down(RLVLA3_BINARY, down_args, {}, dir.File("down"));
  EXPECT_EQ(down.Wait(), 0) << down.Log();
  EXPECT_EQ(up.Wait(), 0) << up.Log();
}

TEST(UpLocal, KilledLearnerRankRestartsTheGroupWhichResumesVersionsGoOn) {
  const testutil::TestDir dir;
  const int base = 24000 + static_cast<int>(getpid() % 500) * 8;  // as above
  const std::vector<std::string> config = DataParallelConfig(dir, base);
  const std::vector<std::string> up_args = Command({"up", "--local"}, config);
  RoleProcess up(RLVLA3_BINARY, up_args, {}, dir.File("up"));
  ASSERT_TRUE(up.WaitFor("roles running", 180)) << up.Stdout() << up.Log();
  EXPECT_NE(up.Stdout().find("learner rank 1 serving"), std::string::npos)
      << up.Stdout();
  // Rank 1 sits after the 1 inference server and 2 rollout workers.
  const std::string rank0 = "127.0.0.1:" + std::to_string(base);
  const std::string rank1 = "127.0.0.1:" + std::to_string(base + 4);
  const std::string ck = dir.path() + "/dp/checkpoints/version_2";
  ASSERT_NO_FATAL_FAILURE(ExpectRanksTrainTogether(rank0, rank1, ck, up));
  ASSERT_NO_FATAL_FAILURE(KillRank1AndExpectTheGroupToResume(up, rank0, dir));
  std::vector<std::string> down_args = Command({"down", "--local"}, config);
  RoleProcess down(RLVLA3_BINARY, down_args, {}, dir.File("down"));
  EXPECT_EQ(down.Wait(), 0) << down.Log();
  EXPECT_EQ(up.Wait(), 0) << up.Log() << LearnerLogTails(dir, "dp");

  // The same run on one rank: it resumes from the group's newest
  // checkpoint (both shards restored) above every version published.
  const uint64_t published =
      std::stoull(ReadFile(dir.path() + "/dp/checkpoints/published_version"));
  RoleProcess again(RLVLA3_BINARY, OneRankArgs(up_args), {}, dir.File("again"));
  ASSERT_TRUE(again.WaitFor("roles running", 180))
      << again.Stdout() << again.Log();
  EXPECT_GT(LearnerVersion(rank0), published);
  EXPECT_TRUE(WaitForVersionAbove(rank0, published + 1, 90));
  RoleProcess down2(RLVLA3_BINARY, down_args, {}, dir.File("down2"));
  EXPECT_EQ(down2.Wait(), 0) << down2.Log();
  EXPECT_EQ(again.Wait(), 0) << again.Log();
}

// The same config ends the same way under `up` as under `train`: the
// learner's exit 0 (rl.max_steps reached) ends the run with 0, never a
// restart; a role that refuses its configuration (exit 2) ends it with 2.
TEST(UpLocal, TheLearnersCleanExitEndsTheRunAndExitTwoIsFinal) {
  const testutil::TestDir dir;
  const int base = 28000 + static_cast<int>(getpid() % 400) * 8;
  auto config = [&](const std::string& name, const std::string& key) {
    return UpConfig(dir, base, name, {key});
  };
  RoleProcess done(RLVLA3_BINARY,
                   Command({"up", "--local"}, config("done", "rl.max_steps=3")),
                   {}, dir.File("done"));
  EXPECT_EQ(done.Wait(), 0) << done.Stdout() << done.Log();
  EXPECT_NE(done.Log().find("learner finished (exit code 0"), std::string::npos)
      << done.Log();
  EXPECT_EQ(done.Stdout().find("restarted"), std::string::npos)
      << done.Stdout();
  RoleProcess refused(
      RLVLA3_BINARY,
      Command({"up", "--local"},
              config("refused", "rl.resume=" + dir.path() + "/nowhere")),
      {}, dir.File("refused"));
  EXPECT_EQ(refused.Wait(), 2) << refused.Stdout() << refused.Log();
  EXPECT_NE(refused.Log().find("learner exited (exit code 2)"),
            std::string::npos)
      << refused.Log();
  EXPECT_NE(refused.Log().find("refused/logs/learner.log"), std::string::npos)
      << refused.Log();
}

// The pid `up` announced for `label` ("learner", "rollout 1"); 0 if none.
pid_t AnnouncedPid(const RoleProcess& up, const std::string& label) {
  std::smatch m;
  const std::string out = up.Stdout();
  if (!std::regex_search(
          out, m, std::regex(label + " serving on [^ ]+ \\(pid ([0-9]+)"))) {
    return 0;
  }
  return std::stoi(m[1]);
}

// `down --local` of the run `config` describes: it and `up` exit 0.
void DownAndExpectCleanExit(const std::vector<std::string>& config,
                            const testutil::TestDir& dir, RoleProcess& up) {
  RoleProcess down(RLVLA3_BINARY, Command({"down", "--local"}, config), {},
                   dir.File("down"));
  EXPECT_EQ(down.Wait(), 0) << down.Log();
  EXPECT_EQ(up.Wait(), 0) << up.Log();
}

// A learner restarted fresh (rl.resume=never) under an inference server and
// rollout workers that kept running starts at a version below theirs: they
// take only newer versions, so it must go on above what they hold (it did
// not: version 1 was never sent, every segment was refused, and the run
// stalled). The units admitted for the versions it dropped, and those queued
// on the worker's broken stream, are lost: with rl.max_policy_lag 0 there is
// no slack, so the learner is starved until the worker tops its envs'
// admission up (before the top-up, 1 run in about 9 stalled for good at
// lag 1; with rl.starved_after_s=0, 1 run of 3 here did).
TEST(UpLocal, AFreshLearnerUnderRunningServersGoesOnAboveTheirVersion) {
  const testutil::TestDir dir;
  const int base = 16000 + static_cast<int>(getpid() % 500) * 8;
  const std::vector<std::string> config = UpConfig(
      dir, base, "fresh",
      {"rl.resume=never", "rl.max_policy_lag=0", "rl.starved_after_s=2"});
  RoleProcess up(RLVLA3_BINARY, Command({"up", "--local"}, config), {},
                 dir.File("up"));
  ASSERT_TRUE(up.WaitFor("roles running", 180)) << up.Stdout() << up.Log();
  const std::string learner = "127.0.0.1:" + std::to_string(base);
  WaitForSteps(learner, 4, 120);
  // The status reports the published version, which follows the step count
  // by the publish (CI once read steps 4 with version 3).
  ASSERT_TRUE(WaitForVersionAbove(learner, 3, 30)) << up.Stdout();
  const uint64_t served = LearnerVersion(learner);
  const pid_t first = AnnouncedPid(up, "learner");
  ASSERT_GT(first, 0) << up.Stdout();
  ASSERT_EQ(kill(first, SIGKILL), 0);
  ASSERT_TRUE(up.WaitFor("learner restarted", 60)) << up.Stdout() << up.Log();
  // Versions advance again within 30 s of the restart, above the old ones.
  EXPECT_TRUE(WaitForVersionAbove(learner, served + 2, 30))
      << LearnerStatus(learner).DebugString()
      << ReadFile(dir.path() + "/fresh/logs/learner.log");
  EXPECT_NE(ReadFile(dir.path() + "/fresh/logs/learner.log")
                .find("a subscriber holds version"),
            std::string::npos);
  DownAndExpectCleanExit(config, dir, up);
}

// The liveness probe: a rollout worker stopped with SIGSTOP (alive, silent)
// is killed and restarted once it has answered no status call for
// cluster.liveness_timeouts x role_timeout_s, and training goes on (before,
// it was flagged silent and left so for ever).
TEST(UpLocal, ARoleAliveButSilentIsKilledAndRestarted) {
  const testutil::TestDir dir;
  const int base = 12000 + static_cast<int>(getpid() % 500) * 8;
  const std::vector<std::string> config =
      UpConfig(dir, base, "live",
               {"cluster.rollout_workers=2", "cluster.role_timeout_s=1",
                "cluster.liveness_timeouts=3"});
  RoleProcess up(RLVLA3_BINARY, Command({"up", "--local"}, config), {},
                 dir.File("up"));
  ASSERT_TRUE(up.WaitFor("roles running", 180)) << up.Stdout() << up.Log();
  const std::string learner = "127.0.0.1:" + std::to_string(base);
  const pid_t stopped = AnnouncedPid(up, "rollout 1");
  ASSERT_GT(stopped, 0) << up.Stdout();
  WaitForSteps(learner, 2, 90);
  ASSERT_EQ(kill(stopped, SIGSTOP), 0);
  ASSERT_TRUE(up.WaitFor("rollout 1 restarted", 60)) << up.Stdout() << up.Log();
  EXPECT_NE(up.Log().find("rollout 1 answered no status call"),
            std::string::npos)
      << up.Log();
  const uint64_t after = LearnerSteps(learner);
  WaitForSteps(learner, after + 2, 90);
  EXPECT_GE(LearnerSteps(learner), after + 2);
  DownAndExpectCleanExit(config, dir, up);
}

// A stale up.pid naming a pid the system gave to another process: `down`
// signals nothing (it sent SIGTERM to whatever held the pid).
TEST(DownLocal, AStaleUpPidNamingAnotherProcessIsNotSignalled) {
  const testutil::TestDir dir;
  const pid_t other = fork();
  ASSERT_GE(other, 0);
  if (other == 0) {
    execl("/bin/sleep", "sleep", "60", static_cast<char*>(nullptr));
    _exit(127);
  }
  std::filesystem::create_directories(dir.path() + "/stale");
  std::ofstream(dir.path() + "/stale/up.pid") << other << "\n";
  RoleProcess down(RLVLA3_BINARY,
                   {"down", "--local", "--config",
                    RLVLA3_SOURCE_DIR "/configs/bench_cpu.yaml", "--set",
                    "run.out_dir=" + dir.path(), "--set", "run.name=stale"},
                   {}, dir.File("down"));
  EXPECT_EQ(down.Wait(), 1) << down.Log();
  EXPECT_NE(down.Log().find("not an `rl-vla3 up`"), std::string::npos)
      << down.Log();
  int status = 0;
  EXPECT_EQ(waitpid(other, &status, WNOHANG), 0);  // still running
  kill(other, SIGKILL);
  waitpid(other, &status, 0);
}

}  // namespace
}  // namespace rlvla3
