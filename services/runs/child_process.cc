#include "services/runs/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"

extern char** environ;

namespace rlvla3 {

absl::Status ChildProcess::Start() {
  if (!exited_) return absl::FailedPreconditionError("already running");
  std::vector<char*> argv;
  for (std::string& a : argv_) argv.push_back(a.data());
  argv.push_back(nullptr);
  // The child's environment, built before fork (no allocation after it).
  std::vector<std::string> env_storage;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const std::string_view name = entry.substr(0, entry.find('='));
    bool replaced = false;
    for (const std::string& x : env_) {
      replaced = replaced || x.compare(0, x.find('='), name) == 0;
    }
    if (!replaced) env_storage.emplace_back(entry);
  }
  env_storage.insert(env_storage.end(), env_.begin(), env_.end());
  std::vector<char*> envp;
  for (std::string& e : env_storage) envp.push_back(e.data());
  envp.push_back(nullptr);
  const int log =
      open(log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log < 0) {
    return absl::UnavailableError(
        absl::StrCat(log_path_, ": ", std::strerror(errno)));
  }
  const pid_t pid = fork();
  if (pid < 0) {
    close(log);
    return absl::UnavailableError(absl::StrCat("fork: ", std::strerror(errno)));
  }
  if (pid == 0) {
    // The child: async-signal-safe calls only. Its own process group, so a
    // terminal's Ctrl-C reaches `up` alone (which stops the roles in order);
    // SIGTERM when `up` dies, so no role outlives it.
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    dup2(log, STDOUT_FILENO);
    dup2(log, STDERR_FILENO);
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  close(log);
  pid_ = pid;
  exited_ = false;
  exit_code_ = 0;
  return absl::OkStatus();
}

bool ChildProcess::Poll() {
  if (exited_) return true;
  int status = 0;
  const pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    exited_ = true;
    exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
  }
  return exited_;
}

void ChildProcess::Terminate() {
  if (!Poll()) kill(pid_, SIGTERM);
}

void ChildProcess::Kill() {
  if (!Poll()) kill(pid_, SIGKILL);
}

void ChildProcess::Stop(absl::Duration grace) {
  if (Poll()) return;
  kill(pid_, SIGTERM);
  const auto end =
      std::chrono::steady_clock::now() + absl::ToChronoNanoseconds(grace);
  while (!Poll() && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (!Poll()) {
    kill(pid_, SIGKILL);
    while (!Poll()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

std::string ChildProcess::HowItEnded() const {
  if (exit_code_ >= 0) return absl::StrCat("exit code ", exit_code_);
  return absl::StrCat("signal ", -exit_code_, " (", strsignal(-exit_code_),
                      ")");
}

}  // namespace rlvla3
