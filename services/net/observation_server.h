// File: services/net/observation_server.h
// -----------------------------------------------------------------------------
// The inference server's end of level 1 over gRPC (the server side of
// observation_client.h): the Inference service's bidirectional Act stream
// feeds the InferenceServer's request queue (it is an ObservationSource),
// and Reply routes each env's action reply back to the stream that sent it.
// One slot per global env id holds the observation's bytes until its reply
// (at most one observation per env in flight), so a stream's reads never
// wait on inference and nothing is allocated per observation. A malformed
// observation, a second one for an env still in flight, or a full request queue
// (overflow policy: reject) gets an error reply naming the field; the stream
// and every other env go on. Sync mode across processes: each rollout stream
// registers its envs and tells which are parked (EnvNotice, ordered with its
// observations), so the barrier (InferenceServerOptions::full_batch =
// ActiveEnvs) waits for every env of every worker that is not parked; a weight
// swap is announced on every registered stream, and the envs resume on it.
//
// Example:
//   ObservationServer svc(options, net, &metrics);
//   auto server = RoleServer::Start(listen, net, {svc.service()});
//   InferenceServer role(io, &svc, &weights, &metrics, &timeline);
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_NET_OBSERVATION_SERVER_H_
#define RLVLA3_SERVICES_NET_OBSERVATION_SERVER_H_

#include <functional>
#include <memory>

#include "runtime/channels/observation_channel.h"
#include "runtime/metrics.h"
#include "services/net/grpc_common.h"
#include "services/net/wire_format.h"

namespace rlvla3 {
namespace v1 {
class RoleStatus;
}  // namespace v1

struct ObservationServerOptions {
  WireShape shape;
  int num_envs = 0;            // global env ids are < num_envs
  int num_tasks = 0;           // rows of the instruction table
  QueueOptions request_queue;  // capacity >= num_envs
  // Replies queued on one stream (its client not reading) before the
  // stream's reads pause until half are written: HTTP/2 flow control then
  // holds the client back, and the server's memory stays bounded.
  int max_queued_replies = 1024;
};

class ObservationServer final : public ObservationSource {
 public:
  ObservationServer(const ObservationServerOptions& options,
                    const NetOptions& net, MetricsRegistry* metrics);
  ~ObservationServer() override;

  grpc::Service* service();
  // What GetStatus answers (also the role's heartbeat).
  void FillStatus(v1::RoleStatus* out);
  // What GetStatus reports besides the service's own counters; set once,
  // before the server starts.
  void SetStatusSource(std::function<void(v1::RoleStatus*)> fill);

  // ObservationSource.
  BoundedQueue<ObservationRequest>& requests() override;
  absl::Status Reply(absl::Span<const ActionReply> replies) override;
  // Wakes the inference actors (the request queue closes).
  void Close();

  // Sync mode across processes. The sync barrier's size: envs registered by
  // live streams (EnvNotice) and not parked.
  int ActiveEnvs();
  // The most replies ever queued on one stream (<= max_queued_replies + the
  // replies of observations accepted before its reads paused).
  int reply_queue_peak() const;
  // The server now serves `version`: every registered stream hears it (and
  // a stream registering later hears the latest at once).
  void AnnounceVersion(uint64_t version);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_NET_OBSERVATION_SERVER_H_
