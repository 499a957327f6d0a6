#include "runtime/thread_priority.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace rlvla3 {

namespace {
id_t CurrentTid() { return static_cast<id_t>(syscall(SYS_gettid)); }
}  // namespace

absl::Status SetCurrentThreadNice(int nice) {
  if (nice < 0 || nice > 19) {
    return absl::InvalidArgumentError(
        absl::StrCat("thread nice ", nice, " is outside 0..19"));
  }
  if (setpriority(PRIO_PROCESS, CurrentTid(), nice) != 0) {
    return absl::PermissionDeniedError(absl::StrCat(
        "setpriority(nice ", nice, ") failed: ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

int CurrentThreadNice() {
  errno = 0;
  return getpriority(PRIO_PROCESS, CurrentTid());
}

}  // namespace rlvla3
