#include "services/runs/cluster_status.h"

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "rlvla3/v1/services.grpc.pb.h"
#include "services/net/role_status.h"
#include "services/net/roster.h"

namespace rlvla3 {
namespace {

constexpr int kExitOk = 0, kExitFailure = 1;

// The learner's roster (every role that sends heartbeats, wherever it runs);
// false if a role is silent or the roster cannot be read.
bool PrintRoster(const std::string& learner, const NetOptions& net) {
  absl::StatusOr<v1::RoleRoster> r = ListRoles(learner, net);
  if (!r.ok()) {
    std::printf("\nroster: %s\n", r.status().ToString().c_str());
    return false;
  }
  std::printf(
      "\nroster of learner %s (heartbeats; silent past %.0f s is flagged)\n",
      learner.c_str(), r->timeout_s());
  std::printf("%-10s %-22s %-16s %8s %22s\n", "ROLE", "ADDRESS",
              "LAST HEARTBEAT", "VERSION", "THROUGHPUT");
  bool all = true;
  for (const v1::RosterEntry& e : r->roles()) {
    const v1::RoleStatus& st = e.status();
    const std::string beat =
        e.silent() ? absl::StrFormat("SILENT %.0f s", e.silent_s())
                   : absl::StrFormat("%.1f s ago", e.silent_s());
    const std::string rate =
        st.role() == "inference"
            ? absl::StrFormat("%.0f obs/s", st.observations_per_s())
            : absl::StrFormat("%.0f frames/s", st.env_frames_per_s());
    std::printf("%-10s %-22s %-16s %8llu %22s\n", st.role().c_str(),
                e.address().c_str(), beat.c_str(),
                static_cast<unsigned long long>(st.policy_version()),
                rate.c_str());
    all = all && !e.silent();
  }
  if (r->roles().empty()) std::printf("(no role has reported yet)\n");
  return all;
}

}  // namespace

int RunStatus(const ClusterLayout& l, const NetOptions& net) {
  std::vector<std::pair<Role, std::string>> roles = {
      {Role::kLearner, l.learner}};
  for (size_t r = 1; r < l.learner_ranks.size(); ++r) {
    roles.emplace_back(Role::kLearner, l.learner_ranks[r]);
  }
  for (const auto& a : l.inference) roles.emplace_back(Role::kInference, a);
  for (const auto& a : l.rollout) roles.emplace_back(Role::kRollout, a);
  std::printf("%-10s %-22s %-12s %8s %22s %9s\n", "ROLE", "ADDRESS", "HEALTH",
              "VERSION", "THROUGHPUT", "UPTIME");
  bool all = true;
  NetOptions quick = net;
  quick.call_timeout = absl::Seconds(2);
  for (const auto& [role, address] : roles) {
    absl::StatusOr<std::string> h = CheckHealth(address, quick);
    const std::string health = h.ok() ? *h : "UNREACHABLE";
    all = all && health == "SERVING";
    absl::StatusOr<v1::RoleStatus> st = QueryRoleStatus(role, address, quick);
    std::string version = "-", rate = "-", up = "-";
    if (st.ok()) {
      version = absl::StrCat(st->policy_version());
      up = absl::StrFormat("%.0f s", st->uptime_s());
      switch (role) {
        case Role::kLearner:
          rate = absl::StrFormat("%.1f samples/s", st->trained_samples_per_s());
          break;
        case Role::kInference:
          rate = absl::StrFormat("%.0f obs/s", st->observations_per_s());
          break;
        case Role::kRollout:
          rate = absl::StrFormat("%.0f frames/s", st->env_frames_per_s());
          break;
      }
    } else if (h.ok()) {
      rate = std::string(st.status().message()).substr(0, 22);
    }
    std::printf("%-10s %-22s %-12s %8s %22s %9s\n", RoleName(role),
                address.c_str(), health.c_str(), version.c_str(), rate.c_str(),
                up.c_str());
  }
  all = PrintRoster(l.learner, quick) && all;
  return all ? kExitOk : kExitFailure;
}

}  // namespace rlvla3
