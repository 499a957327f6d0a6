// File: services/runs/serve_role.h
// -----------------------------------------------------------------------------
// What the three `rl-vla3 serve ROLE` processes share (serve.cc picks one):
// the run loop that ticks once per metrics interval until done or signalled,
// the "ROLE: serving on HOST:PORT" line, heartbeats to the learner's roster,
// and the exit code of a failure. Each role's process is in its own file:
// serve_learner.cc, serve_inference.cc, serve_rollout.cc.
//
// Example:
//   RunUntil(flags.duration_s, 1.0, [&] { return done; }, [&] { Log(); });
//   return FailRole("rollout", status);  // 2: config error or precondition
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_RUNS_SERVE_ROLE_H_
#define RLVLA3_SERVICES_RUNS_SERVE_ROLE_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "runtime/config.h"
#include "runtime/metrics.h"
#include "runtime/prometheus_endpoint.h"
#include "services/net/grpc_common.h"
#include "services/net/roster.h"
#include "services/options/role_setup.h"
#include "services/runs/serve.h"

namespace rlvla3 {
namespace v1 {
class RoleStatus;
}  // namespace v1

// Polls every `interval` until `done()` or a signal; calls `tick` each time.
void RunUntil(double duration_s, double interval_s,
              const std::function<bool()>& done,
              const std::function<void()>& tick);
// The role's own server on `listen`: s.net, taking messages up to
// `receive_bytes` (ServeLimits; the role calls others with s.net's limits).
absl::StatusOr<std::unique_ptr<RoleServer>> StartRoleServer(
    const std::string& listen, const RoleSetup& s, int64_t receive_bytes,
    const std::vector<grpc::Service*>& services);
// Prints "ROLE: serving on HOST:PORT" and returns that address.
std::string Announce(const char* role, const std::string& listen, int port);
// Heartbeats of a role to the learner's roster; `on_reply` hears what each
// reply says of the learner (HeartbeatOptions::on_reply).
absl::StatusOr<std::unique_ptr<HeartbeatSender>> StartHeartbeats(
    const RoleSetup& s, const ServeFlags& f, const std::string& address,
    std::function<void(v1::RoleStatus*)> fill,
    std::function<void(uint64_t, uint64_t)> on_reply = nullptr);
// The role's /metrics endpoint (labels: role, and `index` when not empty: a
// learner's rank, a rollout's worker) when metrics.prometheus_port is set;
// else nullptr. An address in use is an error.
absl::StatusOr<std::unique_ptr<PrometheusEndpoint>> ServeMetrics(
    const RoleSetup& s, const char* role, const std::string& index,
    MetricsRegistry* metrics);
// Logs `s` for `role`; the exit code: 2 for a config error, else 1.
int FailRole(const char* role, const absl::Status& s);

// Each role's process; the exit code.
int ServeLearner(const ServeFlags& f, RoleSetup& s);
int ServeInference(const ServeFlags& f, RoleSetup& s);
int ServeRollout(const ServeFlags& f, RoleSetup& s);

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_RUNS_SERVE_ROLE_H_
