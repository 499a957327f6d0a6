// File: services/net/learner_service.h
// -----------------------------------------------------------------------------
// The learner's end of levels 2 and 3 over gRPC.
//   Level 2: PushSegments (client streaming) decodes each segment into a
//   preallocated pool and queues it for the Learner role (this is its
//   SegmentSource). With no free segment a stream stops reading until the
//   learner releases one: the flow control is the pool, and gRPC's own
//   window carries it back to the rollout worker. Every field of a segment
//   is checked first (DecodeSegment against options.limits and the learner's
//   version): an invalid one is counted and logged, never queued, and ends
//   its call with INVALID_ARGUMENT naming the field; other calls go on.
//   Level 3: SubscribeWeights (server streaming) sends every subscriber the
//   latest published version, chunked; a version is encoded once, by one
//   encoder thread, and shared by all subscribers; a slow subscriber finishes
//   the version it is sending and then jumps to the latest (versions in
//   between are skipped). Versions-only subscribers get one small message per
//   version.
//
// Example:
//   LearnerService svc(options, net, &weights, &metrics);
//   auto server = RoleServer::Start(listen, net, {svc.service()});
//   Learner learner(policy, lo, version, &svc, &weights, &metrics, &tl);
//   svc.SetVersionSource([&] { return learner.version(); });
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_NET_LEARNER_SERVICE_H_
#define RLVLA3_SERVICES_NET_LEARNER_SERVICE_H_

#include <functional>
#include <memory>

#include "policies/policy.h"
#include "runtime/channels/segment_channel.h"
#include "runtime/channels/weight_channel.h"
#include "runtime/metrics.h"
#include "services/net/grpc_common.h"
#include "services/net/wire_format.h"

namespace rlvla3 {
namespace v1 {
class RoleStatus;
class RunSettings;
}  // namespace v1

struct LearnerServiceOptions {
  SegmentShape shape;
  // Ranges a segment is checked against; its max_version is replaced by the
  // learner's version (SetVersionSource) + version_slack at each segment.
  SegmentLimits limits;
  // Data-parallel ranks other than 0 reach a version a moment after rank 0
  // publishes it: they accept one version ahead.
  uint64_t version_slack = 0;
  int segment_count = 64;         // preallocated segments
  size_t chunk_bytes = 4u << 20;  // weight chunk size
};

class LearnerService final : public SegmentSource {
 public:
  // Subscribes to `weights` (publications from now on are served).
  LearnerService(const LearnerServiceOptions& options, const NetOptions& net,
                 WeightChannel<Policy>* weights, MetricsRegistry* metrics);
  ~LearnerService() override;

  grpc::Service* service();
  // What GetStatus reports besides the service's own counters; set once,
  // before the server starts.
  void SetStatusSource(std::function<void(v1::RoleStatus*)> fill);
  // The learner's version, for the segments' version check (default: the
  // weight channel's); set once, before the server starts.
  void SetVersionSource(std::function<uint64_t()> version);
  // What GetRunSettings answers (its policy_version is filled per call);
  // set once, before the server starts.
  void SetRunSettings(const v1::RunSettings& settings);

  // SegmentSource.
  QueueStatus PopBulk(RolloutSegment** out, size_t max, absl::Duration timeout,
                      size_t* n) override;
  void Release(RolloutSegment* segment) override;
  size_t depth() const override;

  // Stops intake and the encoder; PopBulk drains, then reports kClosed.
  void Close();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_NET_LEARNER_SERVICE_H_
