// `rl-vla3 train` restarted in its run folder, as a user or a supervisor
// restarts it (the toy env: seconds per run): it resumes from the newest
// whole checkpoint (training state included) and numbers its versions above
// every version published; torn or unmarked checkpoints are skipped, named
// and set aside; rl.resume=never starts fresh; a bad rl.resume exits 2; a
// checkpoint folder that cannot be written, or a high-water mark that cannot
// be read, stops the run at start.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/checkpoint_store.h"
#include "tests/role_process.h"
#include "tests/services/run_command.h"
#include "tests/test_dir.h"

namespace rlvla3 {
namespace {

namespace fs = std::filesystem;

using Result = testutil::CommandResult;

Result Train(const testutil::TestDir& dir, const std::string& sets) {
  return testutil::RunCommand(
      std::string(RLVLA3_BINARY) +
      " train --config " RLVLA3_SOURCE_DIR
      "/configs/toy_reach.yaml --set run.out_dir=" +
      dir.path() +
      " --set rl.duration_s=60 --set rl.checkpoint_every=5 "
      "--set rl.keep_checkpoints=0 --set metrics.progress=off " +
      sets);
}

std::string Checkpoints(const testutil::TestDir& dir) {
  return dir.path() + "/toy_reach/checkpoints";
}

uint64_t Published(const testutil::TestDir& dir) {
  std::ifstream in(Checkpoints(dir) + "/published_version");
  uint64_t v = 0;
  in >> v;
  return v;
}

// The versions of the complete checkpoints, newest first.
std::vector<uint64_t> Versions(const testutil::TestDir& dir) {
  std::vector<uint64_t> out;
  for (const auto& e : fs::directory_iterator(Checkpoints(dir))) {
    const std::string name = e.path().filename().string();
    if (name.rfind("version_", 0) == 0)
      out.push_back(std::stoull(name.substr(8)));
  }
  std::sort(out.rbegin(), out.rend());
  return out;
}

std::string Path(const testutil::TestDir& dir, uint64_t v) {
  return Checkpoints(dir) + "/version_" + std::to_string(v);
}

// The first version the resumed learner published ("goes on at version V").
uint64_t ResumedAt(const std::string& output) {
  std::smatch m;
  if (!std::regex_search(output, m, std::regex("goes on at version ([0-9]+)")))
    return 0;
  return std::stoull(m[1]);
}

TEST(Resume, TrainResumesFromTheNewestWholeCheckpointVersionsGoOn) {
  const testutil::TestDir dir;
  const Result first = Train(dir, "--set rl.max_steps=20");
  ASSERT_EQ(first.exit_code, 0) << first.output;
  const uint64_t published = Published(dir);
  ASSERT_GE(published, 20u);
  // Every 5 versions, and one at the end.
  const std::vector<uint64_t> versions = Versions(dir);
  ASSERT_GE(versions.size(), 4u);
  EXPECT_EQ(versions[0], published);

  const Result again = Train(dir, "--set rl.max_steps=30");
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_NE(again.output.find("resuming from " + Path(dir, versions[0]) + " "),
            std::string::npos)
      << again.output;
  // The optimizer's state, steps and learning rate came back with it.
  EXPECT_NE(again.output.find("training state restored from"),
            std::string::npos);
  EXPECT_NE(again.output.find(std::to_string(versions[0]) + " steps taken"),
            std::string::npos)
      << again.output;
  EXPECT_EQ(ResumedAt(again.output), published + 1) << again.output;
  EXPECT_GT(Published(dir), published + 1);
}

TEST(Resume, TornAndUnmarkedCheckpointsAreSkippedNamedAndSetAside) {
  const testutil::TestDir dir;
  ASSERT_EQ(Train(dir, "--set rl.max_steps=20").exit_code, 0);
  const std::vector<uint64_t> v = Versions(dir);
  ASSERT_GE(v.size(), 3u);
  // The newest: a truncated optimizer shard; the one before: no MANIFEST
  // (as if killed before its completion mark).
  fs::resize_file(Path(dir, v[0]) + "/optimizer/shard-0-of-1.pt", 64);
  fs::remove(Path(dir, v[1]) + "/MANIFEST");

  const Result again = Train(dir, "--set rl.max_steps=25");
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_NE(again.output.find(Path(dir, v[0]) +
                              "/optimizer/shard-0-of-1.pt: 64 bytes"),
            std::string::npos)
      << again.output;
  EXPECT_NE(again.output.find(Path(dir, v[1]) + ": no MANIFEST"),
            std::string::npos);
  EXPECT_NE(again.output.find("resuming from " + Path(dir, v[2]) + " "),
            std::string::npos);
  const std::string ck = Checkpoints(dir);
  EXPECT_TRUE(fs::exists(ck + "/rejected-version_" + std::to_string(v[0])));
  EXPECT_TRUE(fs::exists(ck + "/rejected-version_" + std::to_string(v[1])));
}

TEST(Resume, NeverStartsFreshAndClearsTheFolder) {
  const testutil::TestDir dir;
  ASSERT_EQ(Train(dir, "--set rl.max_steps=10").exit_code, 0);
  const Result fresh = Train(dir, "--set rl.max_steps=5 --set rl.resume=never");
  ASSERT_EQ(fresh.exit_code, 0) << fresh.output;
  EXPECT_NE(fresh.output.find("rl.resume=never: a fresh start"),
            std::string::npos)
      << fresh.output;
  // The earlier run's checkpoints are gone; this run's are numbered from 0.
  const std::vector<uint64_t> v = Versions(dir);
  ASSERT_FALSE(v.empty());
  EXPECT_LE(v[0], 7u);
  EXPECT_TRUE(fs::exists(Checkpoints(dir) + "/version_5/MANIFEST"));
}

// A high-water mark that exists but cannot be read stops the run, naming
// it: read as 0, the learner would publish below its subscribers' versions.
TEST(Resume, AnUnreadableHighWaterMarkStopsTheRunNamingIt) {
  const testutil::TestDir dir;
  ASSERT_EQ(Train(dir, "--set rl.max_steps=10").exit_code, 0);
  std::ofstream(Checkpoints(dir) + "/published_version") << "garbage\n";
  const std::vector<uint64_t> before = Versions(dir);
  const Result r = Train(dir, "--set rl.max_steps=15");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("published_version: the published high-water mark "
                          "cannot be read"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(Versions(dir), before);  // nothing written, nothing removed
}

// A second `train` on a live run's folder is refused (exit 2, naming the
// holder) before it writes anything; the first runs on and ends whole.
TEST(Resume, ASecondWriterOnALiveRunFolderIsRefused) {
  const testutil::TestDir dir;
  testutil::RoleProcess first(
      RLVLA3_BINARY,
      {"train", "--config", RLVLA3_SOURCE_DIR "/configs/toy_reach.yaml",
       "--set", "run.out_dir=" + dir.path(), "--set", "rl.duration_s=120",
       "--set", "rl.checkpoint_every=5", "--set", "metrics.progress=off"},
      {}, dir.File("first"));
  const std::string lock = dir.path() + "/toy_reach/learner.lock";
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!fs::exists(Checkpoints(dir) + "/version_5/MANIFEST") &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(fs::exists(Checkpoints(dir) + "/version_5/MANIFEST"))
      << first.Log();
  const Result second = Train(dir, "--set rl.max_steps=5");
  EXPECT_EQ(second.exit_code, 2) << second.output;
  EXPECT_NE(second.output.find("another writer holds this run folder (pid "),
            std::string::npos)
      << second.output;
  EXPECT_TRUE(first.running());
  first.Signal(SIGTERM);
  EXPECT_EQ(first.Wait(), 0) << first.Log();
  const Result after = Train(dir, "--set rl.max_steps=1");
  EXPECT_EQ(after.exit_code, 0) << after.output;  // released with the holder
}

// Auto-resume fits the config to the checkpoint it resumes: a given image
// size against it exits 2 naming the key (it ran, and its checkpoints
// recorded the wrong size); the same run without the key resumes.
TEST(Resume, AGivenKeyAgainstTheResumedCheckpointExits2NamingIt) {
  const testutil::TestDir dir;
  ASSERT_EQ(Train(dir, "--set rl.max_steps=5").exit_code, 0);
  const std::vector<uint64_t> before = Versions(dir);
  const Result r = Train(dir, "--set rl.max_steps=10 --set env.image_width=96");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("env.image_width"), std::string::npos) << r.output;
  EXPECT_EQ(Versions(dir), before);
  EXPECT_EQ(Train(dir, "--set rl.max_steps=10").exit_code, 0);
}

// `train --init-checkpoint X` into a folder it would resume instead: X would
// go unused, so the run exits 2 naming the folder's checkpoint and the ways
// out, and changes nothing; rl.resume=never takes X.
TEST(Resume, AnInitCheckpointThatWouldGoUnusedExits2NamingTheWaysOut) {
  const testutil::TestDir dir;
  ASSERT_EQ(Train(dir, "--set rl.max_steps=5").exit_code, 0);
  const std::vector<uint64_t> before = Versions(dir);
  const std::string start = dir.path() + "/start";
  fs::copy(Path(dir, before.back()), start, fs::copy_options::recursive);
  const Result r =
      Train(dir, "--set rl.max_steps=10 --init-checkpoint " + start);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  for (const std::string& part :
       {std::string("rl.init_checkpoint"), Path(dir, before.front()),
        std::string("--set run.name=NEW"), std::string("rl.resume=never")}) {
    EXPECT_NE(r.output.find(part), std::string::npos) << part << "\n"
                                                      << r.output;
  }
  EXPECT_EQ(Versions(dir), before);
  const Result fresh = Train(
      dir,
      "--set rl.max_steps=3 --set rl.resume=never --init-checkpoint " + start);
  EXPECT_EQ(fresh.exit_code, 0) << fresh.output;
  EXPECT_NE(fresh.output.find("starting from " + start), std::string::npos)
      << fresh.output;
}

TEST(Resume, BadResumePathExits2NamingTheKey) {
  const testutil::TestDir dir;
  const Result r = Train(dir, "--set rl.resume=" + dir.path() + "/nowhere");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("rl.resume"), std::string::npos) << r.output;
}

TEST(Resume, UnwritableCheckpointFolderStopsTheRunAtStart) {
  const testutil::TestDir dir;
  fs::create_directories(dir.path() + "/toy_reach");
  std::ofstream(Checkpoints(dir)) << "a file where the folder goes\n";
  const Result r = Train(dir, "--set rl.max_steps=5");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("checkpoints cannot be written"), std::string::npos)
      << r.output;
}

// Replaces `file` of checkpoint `v` by bytes that are no such file and
// marks the checkpoint whole again (a fresh MANIFEST over the new bytes): it
// verifies, and does not load.
void Unloadable(const testutil::TestDir& dir, uint64_t v,
                const std::string& file) {
  const CheckpointStore store(Checkpoints(dir));
  fs::remove(Path(dir, v) + "/MANIFEST");
  fs::rename(Path(dir, v), store.PartialPath(v));
  std::ofstream(store.PartialPath(v) + "/" + file, std::ios::trunc)
      << "not what this file should hold\n";
  ASSERT_TRUE(store.Commit(v).ok());
  ASSERT_TRUE(CheckpointStore::Verify(Path(dir, v)).ok());
}

// The weights of the newest checkpoint do not load: it is set aside and the
// one before it resumed (before: every start failed the same way, and `up`
// restarted the learner into it).
TEST(Resume, ACheckpointThatVerifiesButDoesNotLoadIsSetAside) {
  const testutil::TestDir dir;
  ASSERT_EQ(Train(dir, "--set rl.max_steps=20").exit_code, 0);
  const std::vector<uint64_t> v = Versions(dir);
  ASSERT_GE(v.size(), 3u);
  ASSERT_NO_FATAL_FAILURE(Unloadable(dir, v[0], "model.safetensors"));
  const Result again = Train(dir, "--set rl.max_steps=25");
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_NE(again.output.find("verifies but does not load"), std::string::npos)
      << again.output;
  EXPECT_NE(again.output.find("resuming from " + Path(dir, v[1]) + " "),
            std::string::npos)
      << again.output;
  EXPECT_TRUE(fs::exists(Checkpoints(dir) + "/rejected-version_" +
                         std::to_string(v[0])));
  // Versions still go on above the one set aside.
  EXPECT_EQ(ResumedAt(again.output), v[0] + 1) << again.output;
}

// The training state (optimizer shard) does not load: that start fails,
// the checkpoint is set aside, and the restart resumes the one before it.
TEST(Resume, ATrainingStateThatDoesNotLoadIsSetAsideForTheRestart) {
  const testutil::TestDir dir;
  ASSERT_EQ(Train(dir, "--set rl.max_steps=20").exit_code, 0);
  const std::vector<uint64_t> v = Versions(dir);
  ASSERT_GE(v.size(), 3u);
  ASSERT_NO_FATAL_FAILURE(Unloadable(dir, v[0], "optimizer/shard-0-of-1.pt"));
  const Result failed = Train(dir, "--set rl.max_steps=25");
  EXPECT_NE(failed.exit_code, 0) << failed.output;
  EXPECT_NE(failed.output.find("does not load"), std::string::npos)
      << failed.output;
  const Result again = Train(dir, "--set rl.max_steps=25");
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_NE(again.output.find("resuming from " + Path(dir, v[1]) + " "),
            std::string::npos)
      << again.output;
}

// Checkpoints that all fail are not replaced by a fresh start (which would
// prune them away): exit 2 naming rl.resume=never, nothing moved.
TEST(Resume, CheckpointsThatAllFailAreNotThrownAwayByAFreshStart) {
  const testutil::TestDir dir;
  ASSERT_EQ(Train(dir, "--set rl.max_steps=10").exit_code, 0);
  const std::vector<uint64_t> v = Versions(dir);
  ASSERT_FALSE(v.empty());
  for (uint64_t version : v) {
    fs::resize_file(Path(dir, version) + "/model.safetensors", 16);
  }
  const Result r = Train(dir, "--set rl.max_steps=15");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("none can be resumed"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("rl.resume=never"), std::string::npos);
  EXPECT_EQ(Versions(dir), v);
}

}  // namespace
}  // namespace rlvla3
