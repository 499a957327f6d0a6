// File: services/net/segment_client.h
// -----------------------------------------------------------------------------
// The rollout worker's end of level 2 over gRPC: a client-streaming
// PushSegments call to the learner. Acquire hands out segments of a local
// preallocated pool; Push encodes the segment into one of `in_flight`
// reusable messages, gives the segment back to the pool and queues the
// message for the stream (one write in flight). When every message is queued
// or being written, Push blocks (overflow policy: block; the learner's
// backpressure reaches the env threads, segments are never dropped).
//
// A data-parallel learner has several ranks, each with its own intake: with
// several targets, one stream each, a segment goes to rank
// (global env id / route_block) % ranks, so an env's segments (and, with
// route_block = the GRPO group size, a whole group) always meet on one rank
// and every worker's envs spread over all ranks.
//
// Example:
//   auto ch = GrpcSegmentChannel::Create(options, net);
//   RolloutSegment* s = (*ch)->Acquire();  ...fill...  (*ch)->Push(s);
//   (*ch)->Close();  // half-closes; the learner's reply counts come back
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_NET_SEGMENT_CLIENT_H_
#define RLVLA3_SERVICES_NET_SEGMENT_CLIENT_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/segment_channel.h"
#include "services/net/grpc_common.h"

namespace rlvla3 {

struct SegmentClientOptions {
  std::vector<std::string> targets;  // the learner's ranks, host:port each
  int route_block = 1;               // envs routed together
  int first_env_id = 0;  // global id of this worker's env 0 (routing)
  SegmentShape shape;
  int pool = 8;       // local segments being filled
  int in_flight = 4;  // encoded segments queued or being written
};

class GrpcSegmentChannel final : public SegmentChannel {
 public:
  static absl::StatusOr<std::unique_ptr<GrpcSegmentChannel>> Create(
      const SegmentClientOptions& options, const NetOptions& net);
  ~GrpcSegmentChannel() override;

  RolloutSegment* Acquire() override;
  absl::Status Push(RolloutSegment* segment) override;
  // Writes what is queued, half-closes and waits for the learners' replies
  // (at most 5 s each, then cancels). Acquire returns null afterwards.
  void Close();
  absl::Status status() const;
  uint64_t pushed() const;

  struct Stream;

 private:
  GrpcSegmentChannel() = default;
  std::unique_ptr<SegmentPool> pool_;
  std::vector<std::unique_ptr<Stream>> streams_;  // one per learner rank
  int route_block_ = 1;
  int first_env_id_ = 0;
};

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_NET_SEGMENT_CLIENT_H_
