// File: runtime/checkpoint_store.h
// -----------------------------------------------------------------------------
// CheckpointStore: a run's checkpoint folder, written so that no reader ever
// takes half a checkpoint for a whole one.
//
//   DIR/.partial-version_V/   being written (whatever a writer puts there)
//   DIR/version_V/            complete: renamed into place once MANIFEST,
//                             written last, names every file with its size
//                             and a 64-bit content hash
//   DIR/rejected-version_V/   a checkpoint that failed verification, kept
//                             for inspection (the newest 3) and never listed
//                             again
//   DIR/published_version     the highest version the run ever published
//
// A process killed mid-write leaves a partial folder (never listed); a file
// truncated or damaged after the rename fails Verify (sizes and hashes), so
// NewestValid skips it with a reason and takes the previous complete one.
// Commit fsyncs every file, MANIFEST and the folder before the rename and the
// parent after it, so a power loss leaves the partial folder or a whole
// checkpoint; a torn write that slips through still fails Verify.
//
// Example:
//   CheckpointStore store("runs/x/checkpoints");
//   absl::StatusOr<std::string> dir = store.BeginWrite(120);
//   ... write files under *dir ...
//   absl::StatusOr<std::string> done = store.Commit(120);  // version_120
//   store.Prune(/*keep=*/3);
//   std::vector<std::string> skipped;
//   absl::StatusOr<CheckpointInfo> c = store.NewestValid(&skipped);
// -----------------------------------------------------------------------------
#ifndef RLVLA3_RUNTIME_CHECKPOINT_STORE_H_
#define RLVLA3_RUNTIME_CHECKPOINT_STORE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace rlvla3 {

struct CheckpointInfo {
  std::string path;  // DIR/version_V
  uint64_t version = 0;
};

// A checkpoint that failed Verify, and why ("FILE: reason").
struct SkippedCheckpoint {
  CheckpointInfo checkpoint;
  std::string reason;
};

class CheckpointStore {
 public:
  explicit CheckpointStore(std::string dir) : dir_(std::move(dir)) {}

  // A test hook: called with each path after its fsync succeeded (a file's
  // data, a folder's entries), so a test can drop what was not synced as a
  // power loss would.
  using SyncObserver = std::function<void(const std::string& path)>;
  void SetSyncObserver(SyncObserver observer) { synced_ = std::move(observer); }

  const std::string& dir() const { return dir_; }
  std::string PartialPath(uint64_t version) const;
  std::string CompletePath(uint64_t version) const;

  // Creates DIR and checks that a file can be written and removed there.
  absl::Status CheckWritable() const;
  // An empty staging folder for `version` (a stale one is removed first).
  absl::StatusOr<std::string> BeginWrite(uint64_t version) const;
  // Hashes every file under the staging folder into its MANIFEST (written
  // last) and renames the folder to version_V (replacing one already there).
  absl::StatusOr<std::string> Commit(uint64_t version) const;
  // Removes the staging folder of `version` (an attempt that failed).
  void Abandon(uint64_t version) const;
  // Keeps the newest `keep` checkpoints that verify (keep <= 0: all) and
  // whatever is newer than them; removes older complete ones, and staging
  // folders of versions below the newest complete one. A checkpoint this
  // store committed, or verified once, counts as whole without hashing it
  // again (Prune runs on the learner thread after every commit).
  absl::Status Prune(int keep) const;
  // Removes every staging folder (a writer starting; none is writing).
  absl::Status RemovePartials() const;
  // Renames a complete checkpoint to rejected-version_V; the oldest rejected
  // ones beyond the newest 3 are removed.
  absl::Status Reject(const CheckpointInfo& c) const;
  // Removes every checkpoint and the published mark (a fresh run).
  absl::Status Clear() const;

  // Complete checkpoints (MANIFEST present, not verified), newest first.
  std::vector<CheckpointInfo> List() const;
  // The newest checkpoint that verifies; each newer version_V folder that
  // does not (MANIFEST or not) is appended to `skipped`, and so is each
  // version in `set_aside` (with its reason: one that verified but could
  // not be loaded). NotFound when none is left (then every folder was
  // skipped).
  absl::StatusOr<CheckpointInfo> NewestValid(
      std::vector<SkippedCheckpoint>* skipped,
      const std::vector<SkippedCheckpoint>& set_aside = {}) const;

  // The highest published version: written (atomically, durably) at each
  // publish. 0 when never recorded; DataLoss when the file exists but does
  // not hold a version (never read as 0: see PlanResume).
  absl::Status RecordPublished(uint64_t version) const;
  absl::StatusOr<uint64_t> PublishedHighWater() const;

  // OK when every file MANIFEST names has its size and hash and MANIFEST
  // names at least one file.
  static absl::Status Verify(const std::string& path);

 private:
  // fsync(2) of `path`, then the observer.
  absl::Status Sync(const std::string& path) const;

  // Versions committed or verified whole by this store (and its copies).
  struct Whole {
    std::mutex mu;
    std::set<uint64_t> versions ABSL_GUARDED_BY(mu);
  };
  bool KnownWhole(const CheckpointInfo& c) const;
  void NoteWhole(uint64_t version, bool whole) const;

  std::string dir_;
  SyncObserver synced_;
  std::shared_ptr<Whole> whole_ = std::make_shared<Whole>();
};

// The 64-bit content hash MANIFEST records (word-wise multiply-xorshift).
absl::StatusOr<uint64_t> HashFile(const std::string& path, uint64_t* size);

}  // namespace rlvla3

#endif  // RLVLA3_RUNTIME_CHECKPOINT_STORE_H_
