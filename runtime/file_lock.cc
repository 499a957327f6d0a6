#include "runtime/file_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace rlvla3 {
namespace {

std::string Holder() {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) host[0] = '?';
  return absl::StrCat(
      "pid ", getpid(), " on ", host, " since ",
      absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::Now(), absl::UTCTimeZone()),
      "\n");
}

std::string ReadAll(int fd) {
  std::string text;
  char buf[256];
  ssize_t n = 0;
  off_t at = 0;
  while ((n = pread(fd, buf, sizeof(buf), at)) > 0) {
    text.append(buf, static_cast<size_t>(n));
    at += n;
    if (text.size() > 4096) break;
  }
  return std::string(absl::StripAsciiWhitespace(text));
}

}  // namespace

absl::StatusOr<FileLock> FileLock::Acquire(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path parent =
      std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  if (ec) {
    return absl::UnavailableError(
        absl::StrCat(path, ": creating its folder failed: ", ec.message()));
  }
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::UnavailableError(
        absl::StrCat(path, ": cannot be opened: ", std::strerror(errno)));
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    const std::string holder = ReadAll(fd);
    ::close(fd);
    if (err == EWOULDBLOCK) {
      return absl::FailedPreconditionError(absl::StrCat(
          path, ": another writer holds this run folder (",
          holder.empty() ? "holder unknown" : holder,
          "); stop it, or give this run another run.name or run.out_dir"));
    }
    return absl::UnavailableError(
        absl::StrCat(path, ": flock failed: ", std::strerror(err)));
  }
  const std::string me = Holder();
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, me.data(), me.size(), 0) !=
                                     static_cast<ssize_t>(me.size())) {
    const int err = errno;
    ::close(fd);
    return absl::UnavailableError(absl::StrCat(
        path, ": writing the holder failed: ", std::strerror(err)));
  }
  return FileLock(path, fd);
}

FileLock::FileLock(FileLock&& other) noexcept
    : path_(std::move(other.path_)), fd_(std::exchange(other.fd_, -1)) {}

FileLock& FileLock::operator=(FileLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the flock
}

}  // namespace rlvla3
