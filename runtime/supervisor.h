// File: runtime/supervisor.h
// -----------------------------------------------------------------------------
// Supervisor: starts the threads of a run and watches all of them at once. The
// first thread to return an error stops the run: the supervisor records that
// error (with the thread's name), calls the stop hook once (which closes queues
// so every other thread unblocks), and Wait() returns it after every thread
// has ended. No thread is joined blindly in order, so a failure in any of them
// is seen at once.
//
// Example:
//   Supervisor sup([&] { requests.Close(); });
//   for (int i = 0; i < n; ++i) sup.Spawn(absl::StrCat("env-", i), [&, i] {
//   return RunEnv(i); }); sup.Spawn("actor-0", [&] { return RunActor(); });
//   absl::Status s = sup.Wait();  // first error, or OK when all finished
//   cleanly
// -----------------------------------------------------------------------------
#ifndef RLVLA3_RUNTIME_SUPERVISOR_H_
#define RLVLA3_RUNTIME_SUPERVISOR_H_

#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"

namespace rlvla3 {

class Supervisor {
 public:
  // `on_stop` runs once, on the thread that saw the first error or on the
  // caller of RequestStop(); it must not block.
  explicit Supervisor(std::function<void()> on_stop);
  // Stops and waits for every thread if Wait() was not called.
  ~Supervisor();

  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;

  // Starts `body` on a new thread named `name`. An error it returns (or an
  // exception it throws) stops the run.
  void Spawn(std::string name, std::function<absl::Status()> body);
  // Asks every thread to stop (runs the stop hook); the run's status stays OK.
  void RequestStop();
  // True once an error or RequestStop() stopped the run.
  bool stopping() const;
  // Blocks until every spawned thread has returned; returns the first error,
  // prefixed with the failing thread's name, or OK.
  absl::Status Wait();
  // Threads still running.
  int running() const;

 private:
  void Finish(const std::string& name, absl::Status s);
  void StopOnce();

  std::function<void()> on_stop_;
  // std::mutex rather than absl::Mutex: Debian's Abseil is not
  // TSan-instrumented, so TSan could not see absl::Mutex synchronise the
  // threads it watches.
  mutable std::mutex mu_;
  std::condition_variable all_done_;
  int running_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool stop_hook_ran_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status first_error_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> threads_;  // touched only by the owning thread
};

}  // namespace rlvla3

#endif  // RLVLA3_RUNTIME_SUPERVISOR_H_
