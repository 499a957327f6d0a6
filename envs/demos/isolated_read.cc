#include "envs/demos/isolated_read.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace rlvla3 {
namespace {

// What the child sends: its status code (one byte), then the message, cut.
constexpr size_t kMaxReport = 4096;

// The child: read, report, exit. Nothing here returns.
[[noreturn]] void ReadInChild(int fd, const std::string& path,
                              const DemoReadOptions& options) {
  // A crash here is the report: no core file, and no handler inherited from
  // the parent (absl's failure handler would print a stack as if the run
  // itself had crashed).
  const rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) {
    signal(sig, SIG_DFL);
  }
  const absl::StatusOr<DemoRecording> r = ReadLiberoHdf5(path, options);
  std::string report(1, static_cast<char>(r.status().code()));
  const absl::string_view message = r.status().message();
  report.append(message.data(), std::min(message.size(), kMaxReport - 1));
  size_t sent = 0;
  while (sent < report.size()) {
    const ssize_t n = write(fd, report.data() + sent, report.size() - sent);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) _exit(3);
    sent += static_cast<size_t>(n);
  }
  _exit(0);
}

// The child's report, read until it closes the pipe or `deadline` passes
// (false then).
bool ReadReport(int fd, std::chrono::steady_clock::time_point deadline,
                std::string* report) {
  char buf[512];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    const int ready = poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return false;  // the time is up (or poll failed)
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return true;  // closed: the child is done
    if (report->size() < kMaxReport)
      report->append(buf, static_cast<size_t>(n));
  }
}

absl::Status Refused(const std::string& path, const std::string& why) {
  return absl::InvalidArgumentError(
      absl::StrCat(path, ": ", why, "; nothing of it was used"));
}

}  // namespace

absl::StatusOr<DemoRecording> ReadLiberoHdf5Isolated(
    const std::string& path, const DemoReadOptions& options,
    const IsolatedReadOptions& isolation) {
  struct stat st {};
  const double bytes = stat(path.c_str(), &st) == 0 ? st.st_size : 0.0;
  const absl::Duration limit =
      isolation.base + absl::Seconds(bytes / isolation.min_rate);
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat("pipe: ", strerror(errno)));
  }
  const pid_t pid = fork();
  if (pid < 0) {
    const int err = errno;
    close(fds[0]);
    close(fds[1]);
    return absl::ResourceExhaustedError(absl::StrCat("fork: ", strerror(err)));
  }
  if (pid == 0) {
    close(fds[0]);
    ReadInChild(fds[1], path, options);
  }
  close(fds[1]);
  std::string report;
  const bool finished = ReadReport(
      fds[0],
      std::chrono::steady_clock::now() + absl::ToChronoNanoseconds(limit),
      &report);
  close(fds[0]);
  if (!finished) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!finished) {
    return Refused(path, absl::StrFormat("reading it did not finish in %.0f s "
                                         "(HDF5 looping on a corrupt file?)",
                                         absl::ToDoubleSeconds(limit)));
  }
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    return Refused(
        path,
        absl::StrCat("the HDF5 library crashed reading it (signal ", sig, ", ",
                     strsignal(sig), "): a corrupt or hostile file"));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || report.empty()) {
    return absl::InternalError(
        absl::StrCat(path, ": the reading process failed (status ", status,
                     ") without a report"));
  }
  const auto code =
      static_cast<absl::StatusCode>(static_cast<unsigned char>(report[0]));
  if (code != absl::StatusCode::kOk) {
    return absl::Status(code, report.substr(1));
  }
  return ReadLiberoHdf5(path, options);
}

}  // namespace rlvla3
