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
// A learner rank that goes away (killed, restarting) breaks its stream: the
// segments queued on it are lost, and the next Push to that rank waits for
// the learner to answer again (backing off 0.1 s doubling to 2 s) and opens
// a new stream, for at most `reconnect_timeout`; past it, Push and status()
// fail (the worker stops, and its supervisor restarts it).
//
// Example:
//   auto ch = GrpcSegmentChannel::Create(options, net);
//   RolloutSegment* s = (*ch)->Acquire();  ...fill...  (*ch)->Push(s);
//   (*ch)->Close();  // half-closes; the learner's reply counts come back
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_NET_SEGMENT_CLIENT_H_
#define RLVLA3_SERVICES_NET_SEGMENT_CLIENT_H_

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "runtime/channels/segment_channel.h"
#include "services/net/grpc_common.h"

namespace rlvla3 {

struct SegmentClientOptions {
  std::vector<std::string> targets;  // the learner's ranks, host:port each
  int route_block = 1;               // envs routed together
  int first_env_id = 0;  // global id of this worker's env 0 (routing)
  SegmentShape shape;
  int pool = 8;       // local segments being filled
  int in_flight = 4;  // encoded segments queued or being written
  absl::Duration reconnect_timeout = absl::Seconds(60);
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
  // OK while every rank is reachable or reconnecting in time.
  absl::Status status() const;
  uint64_t pushed() const;
  uint64_t reconnects() const;

  struct Stream;

 private:
  GrpcSegmentChannel() = default;
  std::shared_ptr<Stream> Current(size_t rank) const;
  // Marks a rank's stream broken as soon as its channel leaves READY.
  void Watch();
  // A new stream to `rank` in place of `broken` (unless another pusher
  // replaced it already), once the learner answers, before `deadline`.
  absl::Status Reconnect(size_t rank, const std::shared_ptr<Stream>& broken,
                         absl::Time deadline);

  SegmentClientOptions options_;
  NetOptions net_;
  std::unique_ptr<SegmentPool> pool_;
  std::vector<std::shared_ptr<grpc::Channel>> channels_;
  mutable std::mutex mu_;
  // One per learner rank; replaced streams stay alive until the channel
  // goes (a reactor must outlive its OnDone).
  std::vector<std::shared_ptr<Stream>> streams_ ABSL_GUARDED_BY(mu_);
  std::vector<std::shared_ptr<Stream>> retired_ ABSL_GUARDED_BY(mu_);
  absl::Status failure_ ABSL_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<std::mutex>> reconnecting_;  // one per rank
  std::atomic<bool> closed_{false};
  std::atomic<uint64_t> pushed_{0}, reconnects_{0};
  std::mutex watch_mu_;
  std::condition_variable watch_cv_;
  std::thread watcher_;
};

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_NET_SEGMENT_CLIENT_H_
