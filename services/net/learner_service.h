// File: services/net/learner_service.h
// -----------------------------------------------------------------------------
// The learner role's gRPC service: the Learner service of services.proto,
// one front for the learner's two ends of the data flow, each with its own
// state:
//   level 2, PushSegments -> SegmentServer (segment_server.h): segments
//     decoded into a preallocated pool, the Learner role's SegmentSource;
//   level 3, SubscribeWeights -> WeightServer (weight_server.h): every
//     published version encoded once, latest wins per subscriber.
// The service itself checks each call's token and answers GetStatus and
// GetRunSettings.
//
// Example:
//   LearnerService svc(options, net, &weights, &metrics);
//   auto server = RoleServer::Start(listen, net, {svc.service()});
//   Learner learner(policy, lo, version, &svc.segments(), &weights, ...);
//   svc.SetVersionSource([&] { return learner.version(); });
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_NET_LEARNER_SERVICE_H_
#define RLVLA3_SERVICES_NET_LEARNER_SERVICE_H_

#include <functional>
#include <memory>

#include "policies/policy.h"
#include "runtime/channels/weight_channel.h"
#include "runtime/metrics.h"
#include "services/net/grpc_common.h"
#include "services/net/segment_server.h"
#include "services/net/weight_server.h"

namespace rlvla3 {
namespace v1 {
class RoleStatus;
class RunSettings;
}  // namespace v1

struct LearnerServiceOptions {
  SegmentServerOptions segments;
  // Its max_message_bytes is the network's (NetOptions).
  WeightServerOptions weights;
};

class LearnerService {
 public:
  // Serves `weights`' publications from now on (and the latest one).
  LearnerService(const LearnerServiceOptions& options, const NetOptions& net,
                 WeightChannel<Policy>* weights, MetricsRegistry* metrics);
  ~LearnerService();
  LearnerService(const LearnerService&) = delete;
  LearnerService& operator=(const LearnerService&) = delete;

  grpc::Service* service();
  // Level 2's intake: the learner's SegmentSource.
  SegmentServer& segments();
  // What GetStatus reports besides the service's own counters; set once,
  // before the server starts.
  void SetStatusSource(std::function<void(v1::RoleStatus*)> fill);
  // The learner's version, for the segments' version check (default: the
  // weight channel's); set once, before the server starts.
  void SetVersionSource(std::function<uint64_t()> version);
  // What GetRunSettings answers (its policy_version is filled per call);
  // set once, before the server starts.
  void SetRunSettings(const v1::RunSettings& settings);

  // The highest version a weight subscriber holds (WeightServer's
  // highest_held_version).
  uint64_t highest_held_version() const;

  // Stops intake and the encoder; the segments drain, then report kClosed.
  void Close();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_NET_LEARNER_SERVICE_H_
