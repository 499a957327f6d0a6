#include "services/net/role_status.h"

#include "rlvla3/v1/services.grpc.pb.h"

namespace rlvla3 {

const char* RoleName(Role r) { return kRoleNames.Name(r); }

absl::StatusOr<v1::RoleStatus> QueryRoleStatus(
    Role role, const std::shared_ptr<grpc::Channel>& channel,
    const std::string& target, const NetOptions& net) {
  grpc::ClientContext ctx;
  PrepareContext(&ctx, net, net.call_timeout);
  v1::RoleStatus out;
  grpc::Status s;
  const v1::StatusRequest req;
  switch (role) {
    case Role::kLearner:
      s = v1::Learner::NewStub(channel)->GetStatus(&ctx, req, &out);
      break;
    case Role::kInference:
      s = v1::Inference::NewStub(channel)->GetStatus(&ctx, req, &out);
      break;
    case Role::kRollout:
      s = v1::RolloutControl::NewStub(channel)->GetStatus(&ctx, req, &out);
      break;
  }
  if (!s.ok()) return FromGrpcStatus(s, target);
  return out;
}

absl::StatusOr<v1::RoleStatus> QueryRoleStatus(Role role,
                                               const std::string& target,
                                               const NetOptions& net) {
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel =
      MakeChannel(target, net);
  if (!channel.ok()) return channel.status();
  return QueryRoleStatus(role, *channel, target, net);
}

}  // namespace rlvla3
