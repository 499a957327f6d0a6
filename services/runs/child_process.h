// File: services/runs/child_process.h
// -----------------------------------------------------------------------------
// A child process of `rl-vla3 up --local`: fork + execve with its stdout and
// stderr appended to a log file, polled without blocking, stopped with
// SIGTERM then (after a grace period) SIGKILL. Arguments and environment are
// prepared before fork, so the child runs only async-signal-safe calls until
// execve (the parent has gRPC threads).
//
// Example:
//   ChildProcess p({"/usr/bin/rl-vla3", "serve", "learner", ...}, "l.log");
//   absl::Status s = p.Start();
//   if (p.Poll()) ... p.exit_code() ...
//   p.Stop(absl::Seconds(10));
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_RUNS_CHILD_PROCESS_H_
#define RLVLA3_SERVICES_RUNS_CHILD_PROCESS_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace rlvla3 {

class ChildProcess {
 public:
  // `env`: "NAME=VALUE" entries added to (or replacing in) this process's
  // environment for the child, e.g. a learner rank's RANK and WORLD_SIZE.
  ChildProcess(std::vector<std::string> argv, std::string log_path,
               std::vector<std::string> env = {})
      : argv_(std::move(argv)),
        log_path_(std::move(log_path)),
        env_(std::move(env)) {}
  ~ChildProcess() { Stop(absl::Seconds(5)); }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // Starts (or restarts, once it has exited) the process.
  absl::Status Start();
  // True once it has exited (reaped); never blocks.
  bool Poll();
  bool running() { return pid_ > 0 && !Poll(); }
  // Sends SIGTERM without waiting (when running).
  void Terminate();
  // Sends SIGKILL without waiting (when running): a process that does not
  // answer (stopped, hung) ends all the same.
  void Kill();
  // SIGTERM, then SIGKILL after `grace`; waits for it. Idempotent.
  void Stop(absl::Duration grace);
  // Exit code, or -signal when a signal ended it.
  int exit_code() const { return exit_code_; }
  pid_t pid() const { return pid_; }
  const std::string& log_path() const { return log_path_; }
  // "exit code 1" / "signal 9 (Killed)".
  std::string HowItEnded() const;

 private:
  std::vector<std::string> argv_;
  std::string log_path_;
  std::vector<std::string> env_;
  pid_t pid_ = -1;
  bool exited_ = true;
  int exit_code_ = 0;
};

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_RUNS_CHILD_PROCESS_H_
