// File: services/net/observation_client.h
// -----------------------------------------------------------------------------
// The rollout worker's end of level 1 over gRPC: one bidirectional Act stream
// per inference server, envs sharded across them (env % servers). Submit
// queues the env (its data stays in the worker's segment slot until the reply,
// so it is encoded only when its turn to be written comes: one message per
// stream, reused) and never blocks; replies are checked and handed to the
// reply handler on gRPC's callback threads. Local env ids become global ones
// (+ env_offset) on the wire and local again in replies.
//
// Example:
//   auto ch = GrpcObservationChannel::Create(options, net);
//   (*ch)->SetReplyHandler(handler);     // then hand *ch to RolloutWorker
//   ...
//   (*ch)->Close();  absl::Status s = (*ch)->status();
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_NET_OBSERVATION_CLIENT_H_
#define RLVLA3_SERVICES_NET_OBSERVATION_CLIENT_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/observation_channel.h"
#include "services/net/grpc_common.h"
#include "services/net/wire_format.h"

namespace rlvla3 {

struct ObservationClientOptions {
  std::vector<std::string> targets;  // inference servers, host:port
  int env_offset = 0;                // global id of local env 0
  int num_envs = 0;                  // local envs
  WireShape shape;
};

class GrpcObservationChannel final : public ObservationChannel {
 public:
  // Connects to every target (each within net.call_timeout).
  static absl::StatusOr<std::unique_ptr<GrpcObservationChannel>> Create(
      const ObservationClientOptions& options, const NetOptions& net);
  ~GrpcObservationChannel() override;

  void SetReplyHandler(ActionReplyHandler handler) override;
  absl::Status Submit(const ObservationRequest& request) override;
  // Half-closes every stream and waits for them to end.
  void Close();
  // OK while every stream is healthy; else the first error (a stream that
  // broke, an error reply, a reply handler's error).
  absl::Status status() const;

  struct Stream;

 private:
  GrpcObservationChannel() = default;
  ObservationClientOptions options_;
  ActionReplyHandler handler_;
  std::vector<std::unique_ptr<Stream>> streams_;
};

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_NET_OBSERVATION_CLIENT_H_
