// File: runtime/role_threads.h
// -----------------------------------------------------------------------------
// RoleThreads: a role's threads under one Supervisor, made when the role
// starts, with the Stop / stopping / Wait every role offers its owner (the
// inference server's actors, the learner's thread). Before Start, Stop does
// nothing, stopping is false and Wait returns OK at once. A role holds it as
// its last member, so its destructor stops and joins the threads before any
// other member they use is gone.
//
// Example:
//   class MyRole {
//    public:
//     void Start() {
//       Supervisor& s = threads_.Start([this] { queue_.Close(); });
//       s.Spawn("my-role", [this] { return Loop(); });
//     }
//     void Stop() { threads_.Stop(); }
//     absl::Status Wait() { return threads_.Wait(); }
//    private:
//     ...
//     RoleThreads threads_;  // last
//   };
// -----------------------------------------------------------------------------
#ifndef RLVLA3_RUNTIME_ROLE_THREADS_H_
#define RLVLA3_RUNTIME_ROLE_THREADS_H_

#include <functional>
#include <memory>
#include <utility>

#include "absl/status/status.h"
#include "runtime/supervisor.h"

namespace rlvla3 {

class RoleThreads final {
 public:
  RoleThreads() = default;
  RoleThreads(const RoleThreads&) = delete;
  RoleThreads& operator=(const RoleThreads&) = delete;

  // The supervisor of this start; `on_stop` must not block (it closes what
  // the threads wait on).
  Supervisor& Start(std::function<void()> on_stop) {
    supervisor_ = std::make_unique<Supervisor>(std::move(on_stop));
    return *supervisor_;
  }
  // Asks the role's threads to stop (runs its stop hook once).
  void Stop() {
    if (supervisor_) supervisor_->RequestStop();
  }
  // True once an error or Stop stopped the role.
  bool stopping() const { return supervisor_ && supervisor_->stopping(); }
  // Waits for the role's threads; the first error, or OK.
  absl::Status Wait() {
    return supervisor_ ? supervisor_->Wait() : absl::OkStatus();
  }

 private:
  std::unique_ptr<Supervisor> supervisor_;
};

}  // namespace rlvla3

#endif  // RLVLA3_RUNTIME_ROLE_THREADS_H_
