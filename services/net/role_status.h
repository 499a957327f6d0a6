// File: services/net/role_status.h
// -----------------------------------------------------------------------------
// Asking any role for its RoleStatus: the learner, an inference server and a
// rollout worker each serve GetStatus on their own service; this is the one
// client of all three (`up`, `status`, `bench --placement processes`, tests).
//
// Example:
//   absl::StatusOr<v1::RoleStatus> st =
//       QueryRoleStatus(Role::kRollout, "127.0.0.1:50053", net);
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_NET_ROLE_STATUS_H_
#define RLVLA3_SERVICES_NET_ROLE_STATUS_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "rlvla3/v1/services.pb.h"
#include "runtime/enum_names.h"
#include "services/net/grpc_common.h"

namespace rlvla3 {

enum class Role { kLearner, kInference, kRollout };
inline constexpr EnumNames<Role, 3> kRoleNames{
    {{{Role::kLearner, "learner"},
      {Role::kInference, "inference"},
      {Role::kRollout, "rollout"}}}};

const char* RoleName(Role r);

// GetStatus of `role` over `channel` (to `target`), within net.call_timeout.
absl::StatusOr<v1::RoleStatus> QueryRoleStatus(
    Role role, const std::shared_ptr<grpc::Channel>& channel,
    const std::string& target, const NetOptions& net);
// The same over a new channel.
absl::StatusOr<v1::RoleStatus> QueryRoleStatus(Role role,
                                               const std::string& target,
                                               const NetOptions& net);

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_NET_ROLE_STATUS_H_
