// A data-parallel learner as separate processes over c10d Gloo on loopback
// (dp_rank_main.cc is one rank): 1, 2 and 3 ranks sharing the same global
// batch reach the same parameters (gradients averaged, every rank the same
// step), a checkpoint of the sharded optimizer state resumes on another
// number of ranks, and a rank killed with SIGKILL mid-run ends the others' next
// collective with an error instead of a hang.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "tests/role_process.h"
#include "tests/test_dir.h"

namespace rlvla3 {
namespace {

using testutil::RoleProcess;

std::vector<float> ReadParams(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(f)),
                          std::istreambuf_iterator<char>());
  std::vector<float> out(bytes.size() / sizeof(float));
  std::memcpy(out.data(), bytes.data(), out.size() * sizeof(float));
  return out;
}

double MaxAbsDiff(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size() || a.empty()) return INFINITY;
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i)
    m = std::max(m, std::fabs(double(a[i]) - double(b[i])));
  return m;
}

// Below the ephemeral range (32768-60999), where outgoing connections take
// their ports.
int BasePort() { return 28000 + static_cast<int>(getpid() % 500) * 8; }

// `world` ranks of dp_rank; the processes, started.
std::vector<std::unique_ptr<RoleProcess>> StartRanks(
    const testutil::TestDir& dir, int world, int port,
    const std::vector<std::string>& args) {
  std::vector<std::unique_ptr<RoleProcess>> ranks;
  for (int r = 0; r < world; ++r) {
    ranks.push_back(std::make_unique<RoleProcess>(
        RLVLA3_DP_RANK, args,
        std::vector<std::string>{
            "MASTER_ADDR=127.0.0.1", "MASTER_PORT=" + std::to_string(port),
            "RANK=" + std::to_string(r), "WORLD_SIZE=" + std::to_string(world)},
        dir.File("w" + std::to_string(world) + "_rank" + std::to_string(r))));
  }
  return ranks;
}

TEST(DataParallel, OneTwoAndThreeGlooRanksReachTheSameParameters) {
  const testutil::TestDir dir;
  std::vector<std::vector<float>> rank0;  // per world size
  for (int world : {1, 2, 3}) {
    const std::string out = dir.File("params_w" + std::to_string(world));
    auto ranks = StartRanks(dir, world, BasePort() + world,
                            {"--steps", "3", "--out", out});
    for (auto& r : ranks) ASSERT_EQ(r->Wait(), 0) << r->Log() << r->Stdout();
    const std::vector<float> p0 = ReadParams(out + ".rank0");
    for (int r = 1; r < world; ++r) {
      // Every rank took the same steps: identical parameters.
      EXPECT_LE(MaxAbsDiff(p0, ReadParams(out + ".rank" + std::to_string(r))),
                1e-6)
          << "world " << world << " rank " << r;
    }
    rank0.push_back(p0);
  }
  // The same global batch, split 1, 2 or 3 ways: the same update (up to
  // float summation order).
  EXPECT_LE(MaxAbsDiff(rank0[0], rank0[1]), 1e-4);
  EXPECT_LE(MaxAbsDiff(rank0[0], rank0[2]), 1e-4);
  // And training moved them (not a no-op that trivially agrees).
  const std::string before = dir.File("params_before");
  auto start =
      StartRanks(dir, 1, BasePort() + 4, {"--steps", "0", "--out", before});
  ASSERT_EQ(start[0]->Wait(), 0) << start[0]->Log();
  EXPECT_GT(MaxAbsDiff(ReadParams(before + ".rank0"), rank0[0]), 1e-3);
}

TEST(DataParallel, PpoEpochsNormaliseByTheWholeGlobalBatchOnEveryRank) {
  // Two PPO epochs over the batch with advantages normalised: the moments
  // are all-reduced, so 1 and 2 ranks take the same steps (per-rank moments
  // would scale each rank's advantages differently).
  const testutil::TestDir dir;
  std::vector<std::vector<float>> rank0;
  for (int world : {1, 2}) {
    const std::string out = dir.File("epochs_w" + std::to_string(world));
    auto ranks = StartRanks(dir, world, BasePort() + world,
                            {"--steps", "2", "--epochs", "2", "--out", out});
    for (auto& r : ranks) ASSERT_EQ(r->Wait(), 0) << r->Log() << r->Stdout();
    rank0.push_back(ReadParams(out + ".rank0"));
  }
  // Float summation order differs with the split (and Adam scales tiny
  // gradients up): 2.3e-4 measured at lr 1e-2; per-rank moments gave 0.058.
  EXPECT_LE(MaxAbsDiff(rank0[0], rank0[1]), 1e-3);
}

// Runs `world` ranks to completion; every one must exit 0.
void RunRanks(const testutil::TestDir& dir, int world, int port,
              const std::vector<std::string>& args) {
  auto ranks = StartRanks(dir, world, port, args);
  for (auto& r : ranks) ASSERT_EQ(r->Wait(), 0) << r->Log() << r->Stdout();
}

TEST(DataParallel, ShardedCheckpointSavedAtTwoRanksResumesAtOneAndThree) {
  const testutil::TestDir dir;
  // Five steps without a stop: what the resumed runs must reach.
  const std::string straight = dir.File("straight");
  RunRanks(dir, 1, BasePort() + 6, {"--steps", "5", "--out", straight});
  // Three steps at two ranks, checkpointed: each rank writes its shard of
  // the optimizer state (ZeRO-1: each holds about half of it).
  const std::string ck = dir.File("ck");
  RunRanks(dir, 2, BasePort() + 7,
           {"--steps", "3", "--out", dir.File("first"), "--save", ck});
  ASSERT_TRUE(std::ifstream(ck + "/optimizer/shard-0-of-2.pt").good());
  ASSERT_TRUE(std::ifstream(ck + "/optimizer/shard-1-of-2.pt").good());
  {
    // Without the COMPLETE mark (a rank stopped mid-write) it is refused.
    const std::string partial = dir.File("partial");
    std::filesystem::create_directories(partial + "/optimizer");
    std::filesystem::copy(ck + "/model.safetensors", partial);
    std::filesystem::copy(ck + "/model.json", partial);
    std::filesystem::copy(ck + "/optimizer/shard-0-of-2.pt",
                          partial + "/optimizer");
    std::filesystem::copy(ck + "/optimizer/shard-1-of-2.pt",
                          partial + "/optimizer");
    auto r = StartRanks(dir, 1, BasePort() + 5,
                        {"--steps", "1", "--out", dir.File("partial_out"),
                         "--resume", partial});
    EXPECT_EQ(r[0]->Wait(), 1);
    EXPECT_NE(r[0]->Log().find("incomplete"), std::string::npos) << r[0]->Log();
  }
  for (int world : {1, 3}) {
    const std::string out = dir.File("resumed_w" + std::to_string(world));
    auto ranks = StartRanks(dir, world, BasePort() + world,
                            {"--steps", "2", "--out", out, "--resume", ck});
    for (auto& r : ranks) {
      ASSERT_EQ(r->Wait(), 0) << r->Log() << r->Stdout();
      // Versions go on from the checkpoint's: 3, then 4 and 5.
      EXPECT_NE(r->Stdout().find("step 1 version 5 "), std::string::npos)
          << r->Stdout();
    }
    // Weights and Adam's moments restored: the same parameters as the run
    // that never stopped (fresh moments would move them ~lr per step).
    const std::vector<float> p0 = ReadParams(out + ".rank0");
    EXPECT_LE(MaxAbsDiff(p0, ReadParams(straight + ".rank0")), 1e-4)
        << "resumed at world " << world;
    for (int r = 1; r < world; ++r) {
      EXPECT_LE(MaxAbsDiff(p0, ReadParams(out + ".rank" + std::to_string(r))),
                1e-6);
    }
  }
}

TEST(DataParallel, KilledRankEndsTheGroupWithAnErrorNotAHang) {
  const testutil::TestDir dir;
  auto ranks = StartRanks(
      dir, 3, BasePort() + 5,
      {"--steps", "5", "--out", dir.File("p"), "--stall-at-step", "1"});
  ASSERT_TRUE(ranks[1]->WaitFor("stalled", 60)) << ranks[1]->Log();
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(kill(ranks[1]->pid(), SIGKILL), 0);
  for (int r : {0, 2}) {
    EXPECT_EQ(ranks[r]->Wait(), 1) << ranks[r]->Log();
    EXPECT_NE(ranks[r]->Log().find("learner group"), std::string::npos)
        << ranks[r]->Log();
  }
  // The collective timeout is 10 s: well within 3 x that, not a hang.
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
                .count(),
            30.0);
}

}  // namespace
}  // namespace rlvla3
