// File: services/net/roster.h
// -----------------------------------------------------------------------------
// The run's roster, kept by the learner process: every inference and rollout
// process sends a heartbeat (its RoleStatus) every cluster.heartbeat_s to the
// Roster service; ListRoles answers who is there and how long each has been
// silent, a role silent past the timeout flagged (a process that hangs, is
// stopped, or lost its network, not only one that exited). `rl-vla3 status
// --learner H:P` prints it. HeartbeatSender is the other end: one thread per
// role process, one unary call per period, each with a deadline.
//
// Example:
//   RosterService roster(net, absl::Seconds(10));        // learner process
//   RoleServer::Start(listen, net, {learner.service(), &roster});
//   auto hb = HeartbeatSender::Start({learner, me, absl::Seconds(1)}, net,
//                                    [&](v1::RoleStatus* st) { ... });
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_NET_ROSTER_H_
#define RLVLA3_SERVICES_NET_ROSTER_H_

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "rlvla3/v1/services.grpc.pb.h"
#include "services/net/grpc_common.h"

namespace rlvla3 {

class RosterService final : public v1::Roster::CallbackService {
 public:
  // Keeps at most `max_roles` roles: a new address past it is refused
  // (RESOURCE_EXHAUSTED, naming cluster.max_roster_roles) unless a role
  // silent 10 x `timeout` can be forgotten to make room.
  RosterService(const NetOptions& net, absl::Duration timeout,
                int max_roles = 1024);

  grpc::ServerUnaryReactor* Heartbeat(grpc::CallbackServerContext* ctx,
                                      const v1::HeartbeatRequest* request,
                                      v1::HeartbeatReply* reply) override;
  grpc::ServerUnaryReactor* ListRoles(grpc::CallbackServerContext* ctx,
                                      const v1::StatusRequest* request,
                                      v1::RoleRoster* reply) override;
  // What every heartbeat reply says of the learner (Learner::starved); set
  // once, before serving. Unset: nothing.
  void SetStarvedSource(std::function<uint64_t()> starved);
  // The roster now (also for the learner's own progress line).
  v1::RoleRoster Snapshot() const;

 private:
  struct Entry {
    absl::Time last;
    v1::RoleStatus status;
  };
  const NetOptions net_;
  const absl::Duration timeout_;
  const size_t max_roles_;
  // Names this learner process in replies (its start, in ns since the epoch).
  const uint64_t incarnation_;
  std::function<uint64_t()> starved_;
  // Forgets roles silent 10 x timeout_; whether `address` may now join.
  bool MakeRoom(const std::string& address) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  mutable std::mutex mu_;
  std::map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);  // by address
};

// The roster of the learner at `target`.
absl::StatusOr<v1::RoleRoster> ListRoles(const std::string& target,
                                         const NetOptions& net);

struct HeartbeatOptions {
  std::string learner;  // host:port of the learner (its Roster service)
  std::string address;  // where this role serves
  absl::Duration period = absl::Seconds(1);
  // Each reply's learner incarnation and starvation count (rollout workers:
  // RolloutWorker::OnLearnerStarved); on the sender's thread.
  std::function<void(uint64_t incarnation, uint64_t starved)> on_reply;
};

class HeartbeatSender {
 public:
  // Starts sending at once; `fill` describes the role at each beat. Refused
  // as MakeChannel refuses the learner's address.
  static absl::StatusOr<std::unique_ptr<HeartbeatSender>> Start(
      const HeartbeatOptions& options, const NetOptions& net,
      std::function<void(v1::RoleStatus*)> fill);
  ~HeartbeatSender();  // stops
  HeartbeatSender(const HeartbeatSender&) = delete;
  HeartbeatSender& operator=(const HeartbeatSender&) = delete;

 private:
  HeartbeatSender() = default;
  void Run();
  HeartbeatOptions options_;
  NetOptions net_;
  std::function<void(v1::RoleStatus*)> fill_;
  std::unique_ptr<v1::Roster::Stub> stub_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_NET_ROSTER_H_
