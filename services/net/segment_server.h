// File: services/net/segment_server.h
// -----------------------------------------------------------------------------
// The learner's end of level 2 over gRPC (the server side of
// segment_client.h). Each PushSegments call gets a reactor that decodes every
// segment into a preallocated pool and queues it for the Learner role: this
// is its SegmentSource. With no free segment a stream stops reading until the
// learner releases one: the flow control is the pool, and gRPC's own window
// carries it back to the rollout worker (overflow policy: block). Every field
// of a segment is checked first (DecodeSegment against options.limits and the
// learner's version): an invalid one is counted and logged, never queued, and
// ends its call with INVALID_ARGUMENT naming the field; other calls go on.
//
// Its state (pool, queue, parked streams) is its own; LearnerService routes
// the Learner service's PushSegments calls here after checking the token.
//
// Example:
//   SegmentServer segments(options, &metrics);
//   ... in the service: return segments.StartCall(reply);
//   Learner learner(policy, lo, version, &segments, &weights, &metrics, &tl);
//   segments.Close();  // PopBulk drains, then reports kClosed
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_NET_SEGMENT_SERVER_H_
#define RLVLA3_SERVICES_NET_SEGMENT_SERVER_H_

#include <functional>
#include <memory>

#include "runtime/channels/segment_channel.h"
#include "runtime/metrics.h"
#include "services/net/grpc_common.h"
#include "services/net/wire_format.h"

namespace rlvla3 {
namespace v1 {
class TrajectorySegment;
class PushSegmentsReply;
}  // namespace v1

struct SegmentServerOptions {
  SegmentShape shape;
  // Ranges a segment is checked against; its max_version is replaced by the
  // learner's version (SetVersionSource) + version_slack at each segment.
  SegmentLimits limits;
  // Data-parallel ranks other than 0 reach a version a moment after rank 0
  // publishes it: they accept one version ahead.
  uint64_t version_slack = 0;
  int segment_count = 64;  // preallocated segments
  // Streams waiting for a free segment at most; one more is refused
  // (RESOURCE_EXHAUSTED) rather than held.
  size_t max_parked_streams = 1024;
};

class SegmentServer final : public SegmentSource {
 public:
  SegmentServer(const SegmentServerOptions& options, MetricsRegistry* metrics);
  ~SegmentServer() override;

  // The reactor of one PushSegments call (the caller checked its token);
  // `reply` counts the segments it accepted.
  grpc::ServerReadReactor<v1::TrajectorySegment>* StartCall(
      v1::PushSegmentsReply* reply);
  // The learner's version, for the segments' version check; set once,
  // before the server starts (default: no version is too new).
  void SetVersionSource(std::function<uint64_t()> version);

  // SegmentSource.
  QueueStatus PopBulk(RolloutSegment** out, size_t max, absl::Duration timeout,
                      size_t* n) override;
  void Release(RolloutSegment* segment) override;
  size_t depth() const override;

  bool closed() const;
  // Segments refused (an invalid field) so far.
  uint64_t rejected() const;
  // Streams waiting for a free segment now.
  size_t parked_streams() const;
  // Stops intake: parked calls end CANCELLED; PopBulk drains, then reports
  // kClosed.
  void Close();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_NET_SEGMENT_SERVER_H_
