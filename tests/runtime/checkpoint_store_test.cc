// CheckpointStore: a checkpoint is listed only once whole; torn, truncated,
// damaged and unmarked ones are skipped with a reason; a writer killed with
// SIGKILL mid-write never leaves a checkpoint that loads.
#include "runtime/checkpoint_store.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/test_dir.h"

namespace rlvla3 {
namespace {

namespace fs = std::filesystem;

void WriteBytes(const std::string& path, size_t n, char fill) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream out(path, std::ios::binary);
  const std::string chunk(64 << 10, fill);
  for (size_t done = 0; done < n; done += chunk.size()) {
    out.write(chunk.data(),
              static_cast<std::streamsize>(std::min(chunk.size(), n - done)));
  }
}

// One checkpoint of `version`: a weights file and an optimizer shard.
std::string WriteCheckpoint(const CheckpointStore& store, uint64_t version,
                            size_t bytes = 4096) {
  absl::StatusOr<std::string> dir = store.BeginWrite(version);
  EXPECT_TRUE(dir.ok()) << dir.status();
  WriteBytes(*dir + "/model.safetensors", bytes, 'w');
  WriteBytes(*dir + "/optimizer/shard-0-of-1.pt", bytes / 2, 'o');
  absl::StatusOr<std::string> done = store.Commit(version);
  EXPECT_TRUE(done.ok()) << done.status();
  return done.ok() ? *done : "";
}

TEST(CheckpointStore, CommitListsNewestFirstAndPruneKeepsTheNewest) {
  const testutil::TestDir t;
  CheckpointStore store(t.File("ck"));
  ASSERT_TRUE(store.CheckWritable().ok());
  for (uint64_t v : {3, 7, 5, 9}) WriteCheckpoint(store, v);
  std::vector<CheckpointInfo> all = store.List();
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all[0].version, 9u);
  EXPECT_EQ(all[3].version, 3u);
  ASSERT_TRUE(store.Prune(2).ok());
  all = store.List();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].version, 9u);
  EXPECT_EQ(all[1].version, 7u);
  EXPECT_FALSE(fs::exists(store.CompletePath(3)));
}

TEST(CheckpointStore, PartialFoldersAreNeverListed) {
  const testutil::TestDir t;
  CheckpointStore store(t.File("ck"));
  WriteCheckpoint(store, 4);
  absl::StatusOr<std::string> half = store.BeginWrite(8);
  ASSERT_TRUE(half.ok());
  WriteBytes(*half + "/model.safetensors", 1000, 'x');
  std::vector<SkippedCheckpoint> skipped;
  absl::StatusOr<CheckpointInfo> c = store.NewestValid(&skipped);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->version, 4u);
  EXPECT_TRUE(skipped.empty());
  ASSERT_TRUE(store.RemovePartials().ok());
  EXPECT_FALSE(fs::exists(store.PartialPath(8)));
}

TEST(CheckpointStore, TruncatedFileIsSkippedNamingIt) {
  const testutil::TestDir t;
  CheckpointStore store(t.File("ck"));
  WriteCheckpoint(store, 1);
  const std::string newest = WriteCheckpoint(store, 2);
  fs::resize_file(newest + "/optimizer/shard-0-of-1.pt", 100);
  std::vector<SkippedCheckpoint> skipped;
  absl::StatusOr<CheckpointInfo> c = store.NewestValid(&skipped);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->version, 1u);
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_NE(skipped[0].reason.find("shard-0-of-1.pt"), std::string::npos);
  EXPECT_NE(skipped[0].reason.find("truncated"), std::string::npos);
}

TEST(CheckpointStore, DamagedHeaderIsSkipped) {
  const testutil::TestDir t;
  CheckpointStore store(t.File("ck"));
  WriteCheckpoint(store, 1);
  const std::string newest = WriteCheckpoint(store, 2);
  {  // Same size, first bytes (a safetensors header's length) overwritten.
    std::fstream f(newest + "/model.safetensors",
                   std::ios::binary | std::ios::in | std::ios::out);
    f.write("\xff\xff\xff\xff", 4);
  }
  std::vector<SkippedCheckpoint> skipped;
  absl::StatusOr<CheckpointInfo> c = store.NewestValid(&skipped);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->version, 1u);
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_NE(skipped[0].reason.find("damaged"), std::string::npos);
}

TEST(CheckpointStore, MissingOrCutManifestIsSkipped) {
  const testutil::TestDir t;
  CheckpointStore store(t.File("ck"));
  WriteCheckpoint(store, 1);
  const std::string two = WriteCheckpoint(store, 2);
  const std::string three = WriteCheckpoint(store, 3);
  fs::remove(three + "/MANIFEST");
  // Version 2's MANIFEST loses its last lines.
  std::ifstream in(two + "/MANIFEST");
  std::string first;
  std::getline(in, first);
  in.close();
  std::ofstream(two + "/MANIFEST") << first << "\n";
  std::vector<SkippedCheckpoint> skipped;
  absl::StatusOr<CheckpointInfo> c = store.NewestValid(&skipped);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->version, 1u);
  ASSERT_EQ(skipped.size(), 2u);
  EXPECT_EQ(skipped[0].checkpoint.version, 3u);
  EXPECT_EQ(skipped[1].checkpoint.version, 2u);
  // A rejected one is never listed or verified again.
  ASSERT_TRUE(store.Reject(skipped[0].checkpoint).ok());
  std::vector<SkippedCheckpoint> again;
  ASSERT_TRUE(store.NewestValid(&again).ok());
  EXPECT_EQ(again.size(), 1u);
}

TEST(CheckpointStore, NoneValidIsNotFound) {
  const testutil::TestDir t;
  CheckpointStore store(t.File("ck"));
  const std::string one = WriteCheckpoint(store, 1);
  fs::remove(one + "/model.safetensors");
  std::vector<SkippedCheckpoint> skipped;
  EXPECT_EQ(store.NewestValid(&skipped).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(skipped.size(), 1u);
}

TEST(CheckpointStore, PublishedHighWaterRoundTripsAndClears) {
  const testutil::TestDir t;
  CheckpointStore store(t.File("ck"));
  ASSERT_TRUE(store.CheckWritable().ok());
  EXPECT_EQ(store.PublishedHighWater().value_or(99), 0u);
  ASSERT_TRUE(store.RecordPublished(41).ok());
  ASSERT_TRUE(store.RecordPublished(42).ok());
  EXPECT_EQ(store.PublishedHighWater().value_or(0), 42u);
  WriteCheckpoint(store, 40);
  ASSERT_TRUE(store.Clear().ok());
  EXPECT_EQ(store.PublishedHighWater().value_or(99), 0u);
  EXPECT_TRUE(store.List().empty());
}

// A mark that exists but holds no version is an error, never 0: read as 0,
// a restarted learner would publish below what its subscribers hold.
TEST(CheckpointStore, AnUnreadableHighWaterMarkIsAnErrorNotZero) {
  const testutil::TestDir t;
  CheckpointStore store(t.File("ck"));
  ASSERT_TRUE(store.CheckWritable().ok());
  for (const char* bad : {"", "12x\n", "garbage\n"}) {
    std::ofstream(t.File("ck/published_version")) << bad;
    absl::StatusOr<uint64_t> v = store.PublishedHighWater();
    ASSERT_FALSE(v.ok()) << "'" << bad << "' read as " << *v;
    EXPECT_EQ(v.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_NE(v.status().message().find("published_version"), std::string::npos)
        << v.status();
  }
}

// Rejected checkpoints are kept for inspection, but not without bound.
TEST(CheckpointStore, OnlyTheNewestRejectedCheckpointsAreKept) {
  const testutil::TestDir t;
  CheckpointStore store(t.File("ck"));
  for (uint64_t v = 1; v <= 6; ++v) {
    WriteCheckpoint(store, v);
    ASSERT_TRUE(store.Reject({store.CompletePath(v), v}).ok());
  }
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(t.File("ck"))) {
    left.push_back(e.path().filename().string());
  }
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{"rejected-version_4",
                                            "rejected-version_5",
                                            "rejected-version_6"}));
}

TEST(CheckpointStore, UnwritableFolderIsAClearError) {
  const testutil::TestDir t;
  // A regular file where a folder should be: unwritable even for root.
  WriteBytes(t.File("ro"), 16, 'x');
  CheckpointStore store(t.File("ro") + "/ck");
  const absl::Status s = store.CheckWritable();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("ro/ck"), std::string::npos) << s;
}

// A real writer process, SIGKILLed at random moments while it writes
// checkpoint after checkpoint (each a few MB): after every kill, each listed
// checkpoint verifies and the newest valid one is whole. Where a kill lands
// depends on the machine's speed, so the test kills until at least ten kills
// have landed mid-write (a partial folder left), at most 300 times.
TEST(CheckpointStore, WriterKilledMidWriteNeverLeavesATornCheckpoint) {
  const testutil::TestDir t;
  CheckpointStore store(t.File("ck"));
  ASSERT_TRUE(store.CheckWritable().ok());
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> delay_ms(5, 60);
  uint64_t next = 1;
  int kills = 0, partial_left = 0;
  for (int round = 0; round < 300 && (round < 24 || partial_left < 10);
       ++round) {
    const uint64_t first = next;
    next += 1000;
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      for (uint64_t v = first;; ++v) {
        absl::StatusOr<std::string> dir = store.BeginWrite(v);
        if (!dir.ok()) _exit(3);
        WriteBytes(*dir + "/model.safetensors", 3 << 20, 'w');
        WriteBytes(*dir + "/optimizer/shard-0-of-1.pt", 2 << 20, 'o');
        if (!store.Commit(v).ok() || !store.Prune(2).ok()) _exit(4);
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms(rng)));
    ASSERT_EQ(kill(pid, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(status)) << "the writer failed: " << status;
    ++kills;
    for (const CheckpointInfo& c : store.List()) {
      EXPECT_TRUE(CheckpointStore::Verify(c.path).ok()) << c.path;
    }
    std::error_code ec;
    for (fs::directory_iterator it(store.dir(), ec), end; it != end; ++it) {
      if (it->path().filename().string().rfind(".partial", 0) == 0) {
        ++partial_left;
      }
    }
    std::vector<SkippedCheckpoint> skipped;
    absl::StatusOr<CheckpointInfo> c = store.NewestValid(&skipped);
    if (c.ok()) {
      EXPECT_TRUE(CheckpointStore::Verify(c->path).ok());
    }
    EXPECT_TRUE(skipped.empty()) << skipped[0].reason;
    ASSERT_TRUE(store.RemovePartials().ok());  // as a restarted writer does
  }
  EXPECT_GE(kills, 24);
  std::printf(
      "writer kills: %d, of them mid-write (a partial folder left): %d\n",
      kills, partial_left);
  EXPECT_GE(partial_left, 10) << "too few kills landed mid-write";
}

// A power loss right after Commit, as the page cache loses it: of the
// checkpoint folder `version_V` (written at .partial-version_V, then
// renamed), a file keeps its data only if it was synced, and its entry only
// if its folder was synced; the rename holds only if the store's folder was
// synced after it (else the folder is back at its partial name).
void LosePower(const CheckpointStore& store, uint64_t version,
               const std::set<std::string>& synced) {
  const std::string complete = store.CompletePath(version);
  const std::string partial = store.PartialPath(version);
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(complete)) {
    if (e.is_regular_file()) files.push_back(e.path());
  }
  for (const fs::path& f : files) {
    const std::string rel = fs::relative(f, complete).string();
    const fs::path written = fs::path(partial) / rel;
    bool entry = true;  // every folder from the file up to the checkpoint's
    for (fs::path d = written.parent_path();
         d.string().size() >= partial.size(); d = d.parent_path()) {
      entry = entry && synced.count(d.string()) > 0;
    }
    if (!entry) {
      fs::remove(f);
    } else if (synced.count(written.string()) == 0) {
      fs::resize_file(f, 0);
    }
  }
  if (synced.count(store.dir()) == 0) fs::rename(complete, partial);
}

TEST(CheckpointStore, APowerLossAfterACommitLeavesACheckpointThatVerifies) {
  const testutil::TestDir dir;
  CheckpointStore store(dir.path());
  std::set<std::string> synced;
  store.SetSyncObserver([&](const std::string& p) { synced.insert(p); });
  ASSERT_FALSE(WriteCheckpoint(store, 5).empty());
  LosePower(store, 5, synced);
  std::vector<SkippedCheckpoint> skipped;
  absl::StatusOr<CheckpointInfo> c = store.NewestValid(&skipped);
  ASSERT_TRUE(c.ok()) << c.status()
                      << (skipped.empty() ? "" : skipped[0].reason);
  EXPECT_EQ(c->version, 5u);

  // A commit whose syncs never happened (a power cut before them): its
  // checkpoint is gone or torn, and the one before it is resumed.
  synced.clear();
  store.SetSyncObserver(nullptr);
  ASSERT_FALSE(WriteCheckpoint(store, 7).empty());
  LosePower(store, 7, synced);
  c = store.NewestValid(&skipped);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->version, 5u);
}

// Newer checkpoints that do not verify do not count towards `keep`: the
// older whole ones stay (pruning once removed the only ones resume could
// use).
TEST(CheckpointStore, PruneKeepsWholeCheckpointsBehindTornNewerOnes) {
  const testutil::TestDir dir;
  {
    const CheckpointStore before(dir.path());  // the process that tore them
    for (uint64_t v : {1, 2, 3, 4})
      ASSERT_FALSE(WriteCheckpoint(before, v).empty());
  }
  const CheckpointStore store(dir.path());
  fs::resize_file(store.CompletePath(3) + "/model.safetensors", 10);
  fs::resize_file(store.CompletePath(4) + "/model.safetensors", 10);
  ASSERT_TRUE(store.Prune(2).ok());
  std::vector<uint64_t> left;
  for (const CheckpointInfo& c : store.List()) left.push_back(c.version);
  EXPECT_EQ(left, (std::vector<uint64_t>{4, 3, 2, 1}));
  absl::StatusOr<CheckpointInfo> c = store.NewestValid(nullptr);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->version, 2u);
  ASSERT_FALSE(WriteCheckpoint(store, 5).empty());
  ASSERT_TRUE(store.Prune(2).ok());
  left.clear();
  for (const CheckpointInfo& c : store.List()) left.push_back(c.version);
  EXPECT_EQ(left, (std::vector<uint64_t>{5, 4, 3, 2}));
}

// Prune runs on the learner thread after every commit: what this store
// committed (or verified once) is not hashed again. A file changed behind
// its back afterwards is not seen by it, and is by a new store (a restart),
// which verifies.
TEST(CheckpointStore, PruneHashesWhatItCommittedNoMore) {
  const testutil::TestDir dir;
  const CheckpointStore store(dir.path());
  for (uint64_t v : {1, 2, 3}) ASSERT_FALSE(WriteCheckpoint(store, v).empty());
  fs::resize_file(store.CompletePath(3) + "/model.safetensors", 10);
  ASSERT_TRUE(store.Prune(2).ok());
  std::vector<uint64_t> left;
  for (const CheckpointInfo& c : store.List()) left.push_back(c.version);
  EXPECT_EQ(left, (std::vector<uint64_t>{3, 2}));  // 3 not hashed again
  ASSERT_TRUE(CheckpointStore(dir.path()).Prune(1).ok());
  left.clear();
  for (const CheckpointInfo& c : store.List()) left.push_back(c.version);
  EXPECT_EQ(left, (std::vector<uint64_t>{3, 2}));  // 3 hashed: torn
}

}  // namespace
}  // namespace rlvla3
