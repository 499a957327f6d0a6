// File: runtime/file_lock.h
// -----------------------------------------------------------------------------
// FileLock: one writer per run folder. An exclusive flock(2) on a lock file,
// held for the holder's life (released when the process ends, however it
// ends); the file names its holder ("pid P on HOST since T") so that a
// second writer is refused with who holds it.
//
// Example:
//   absl::StatusOr<FileLock> lock = FileLock::Acquire(run_dir +
//   "/learner.lock"); if (!lock.ok()) return lock.status();  //
//   FailedPrecondition naming the holder
//   ... write the run folder; `lock` lives as long as the writer ...
// -----------------------------------------------------------------------------
#ifndef RLVLA3_RUNTIME_FILE_LOCK_H_
#define RLVLA3_RUNTIME_FILE_LOCK_H_

#include <string>

#include "absl/status/statusor.h"

namespace rlvla3 {

class FileLock {
 public:
  // Creates `path` (and its folder) if missing and takes it exclusively,
  // without waiting: FailedPrecondition naming the holder when another open
  // of it (this process or another) holds it.
  static absl::StatusOr<FileLock> Acquire(const std::string& path);

  FileLock(FileLock&& other) noexcept;
  FileLock& operator=(FileLock&& other) noexcept;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  ~FileLock();

  const std::string& path() const { return path_; }

 private:
  FileLock(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  std::string path_;
  int fd_ = -1;
};

}  // namespace rlvla3

#endif  // RLVLA3_RUNTIME_FILE_LOCK_H_
