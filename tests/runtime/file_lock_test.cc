// FileLock: one writer per run folder, across threads' opens and processes;
// released when the holder ends, however it ends.
#include "runtime/file_lock.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "tests/test_dir.h"

namespace rlvla3 {
namespace {

TEST(FileLock, ASecondWriterIsRefusedNamingTheHolderUntilItIsReleased) {
  const testutil::TestDir t;
  const std::string path = t.File("run/learner.lock");
  {
    absl::StatusOr<FileLock> first = FileLock::Acquire(path);
    ASSERT_TRUE(first.ok()) << first.status();
    absl::StatusOr<FileLock> second = FileLock::Acquire(path);
    ASSERT_FALSE(second.ok());
    EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_NE(second.status().message().find(absl::StrCat("pid ", getpid())),
              std::string::npos)
        << second.status();
    FileLock moved = *std::move(first);  // still held
    EXPECT_FALSE(FileLock::Acquire(path).ok());
  }
  EXPECT_TRUE(FileLock::Acquire(path).ok());
}

TEST(FileLock, AHolderKilledWithSigkillReleasesIt) {
  const testutil::TestDir t;
  const std::string path = t.File("learner.lock");
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    absl::StatusOr<FileLock> held = FileLock::Acquire(path);
    const char ok = held.ok() ? 'y' : 'n';
    if (write(ready[1], &ok, 1) != 1) _exit(3);
    pause();
    _exit(0);
  }
  char ok = 0;
  ASSERT_EQ(read(ready[0], &ok, 1), 1);
  ASSERT_EQ(ok, 'y');
  absl::StatusOr<FileLock> refused = FileLock::Acquire(path);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find(absl::StrCat("pid ", child)),
            std::string::npos)
      << refused.status();
  ASSERT_EQ(kill(child, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(FileLock::Acquire(path).ok());
  close(ready[0]);
  close(ready[1]);
}

}  // namespace
}  // namespace rlvla3
