#include "services/runs/serve_role.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "rlvla3/v1/services.grpc.pb.h"
#include "runtime/config_schema.h"
#include "runtime/rate_meter.h"
#include "runtime/stop_signal.h"

namespace rlvla3 {
namespace {

constexpr int kExitFailure = 1, kExitUsage = 2;
using Clock = std::chrono::steady_clock;

}  // namespace

// Polls every `interval` until `done()` or a signal; calls `tick` each time.
void RunUntil(double duration_s, double interval_s,
              const std::function<bool()>& done,
              const std::function<void()>& tick) {
  const auto t0 = Clock::now();
  auto next = t0;
  const auto step = std::chrono::microseconds(
      static_cast<int64_t>(std::max(0.05, interval_s) * 1e6));
  for (;;) {
    next += step;
    while (Clock::now() < next && !done() && !StopSignalled()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (done() || StopSignalled()) return;
    if (duration_s > 0 &&
        std::chrono::duration<double>(Clock::now() - t0).count() >=
            duration_s) {
      return;
    }
    tick();
  }
}

absl::StatusOr<std::unique_ptr<RoleServer>> StartRoleServer(
    const std::string& listen, const RoleSetup& s, int64_t receive_bytes,
    const std::vector<grpc::Service*>& services) {
  NetOptions n = s.net;
  n.server_max_receive_bytes = receive_bytes;
  return RoleServer::Start(listen, n, services);
}

// Prints "ROLE: serving on HOST:PORT" and returns that address.
std::string Announce(const char* role, const std::string& listen, int port) {
  const std::string address =
      absl::StrCat(listen.substr(0, listen.rfind(':')), ":", port);
  std::printf("%s: serving on %s\n", role, address.c_str());
  std::fflush(stdout);
  return address;
}

// Heartbeats of a role to the learner's roster.
absl::StatusOr<std::unique_ptr<HeartbeatSender>> StartHeartbeats(
    const RoleSetup& s, const ServeFlags& f, const std::string& address,
    std::function<void(v1::RoleStatus*)> fill,
    std::function<void(uint64_t, uint64_t)> on_reply) {
  return HeartbeatSender::Start(
      {f.learner, address, absl::Seconds(s.timings.heartbeat_s),
       std::move(on_reply)},
      s.net, std::move(fill));
}

absl::StatusOr<std::unique_ptr<PrometheusEndpoint>> ServeMetrics(
    const RoleSetup& s, const char* role, const std::string& index,
    MetricsRegistry* metrics) {
  PrometheusOptions o = s.prometheus;
  o.labels = {{"role", role}};
  if (!index.empty()) o.labels.emplace_back("index", index);
  return PrometheusEndpoint::StartIfAsked(o, metrics, role);
}

int FailRole(const char* role, const absl::Status& s) {
  spdlog::error("{}: {}", role, s.ToString());
  // A config error, or a precondition only the operator can fix (another
  // writer holds the run folder): restarting cannot help.
  return IsConfigError(s) || s.code() == absl::StatusCode::kFailedPrecondition
             ? kExitUsage
             : kExitFailure;
}

}  // namespace rlvla3
