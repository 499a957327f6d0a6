// File: runtime/channels/observation_channel.h
// -----------------------------------------------------------------------------
// Level 1 channel: rollout workers submit one env's observation at a time;
// the inference server batches them and answers each env with its action
// chunk. Two ends, so that a role never knows what carries its messages:
//   ObservationChannel  the rollout worker's end: Submit, and a reply handler
//                       that receives action replies (any thread);
//   ObservationSource   the inference server's end: the queue of waiting
//                       requests, and Reply.
// LocalObservationChannel implements both in one process: a request is a few
// pointers into the worker's segment slot (borrowed until its reply) and a
// reply is delivered by calling the handler on the replying thread. A gRPC
// implementation copies the same fields into the proto messages.
//
// Example:
//   LocalObservationChannel ch(queue_options);
//   ch.SetReplyHandler([](absl::Span<const ActionReply> r) { ... });
//   ch.Submit({.env = 3, .images = {a, w}, .proprio = p});
//   // inference side:
//   DynamicBatcher<ObservationRequest> batcher(&ch.requests(), options);
//   batcher.NextBatch(batch);  ...  ch.Reply(replies);
// -----------------------------------------------------------------------------
#ifndef RLVLA3_RUNTIME_CHANNELS_OBSERVATION_CHANNEL_H_
#define RLVLA3_RUNTIME_CHANNELS_OBSERVATION_CHANNEL_H_

#include <array>
#include <cstdint>
#include <functional>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "runtime/bounded_queue.h"
#include "runtime/channels/rollout_segment.h"

namespace rlvla3 {

// One env's observation for a decision. The pointed-to data stays valid and
// unchanged until the env's reply arrives.
struct ObservationRequest {
  int env = 0;   // global env id (unique across workers)
  int task = 0;  // row of the run's instruction table
  // The run's cameras in order (SegmentShape::cameras of them), each
  // [H, W, 3]; the rest null.
  std::array<const uint8_t*, kMaxCameras> images{};
  const float* proprio = nullptr;  // [proprio_dim]
  int64_t submit_ns = 0;           // steady clock, for queue dwell
};

// The inference result for one env. Pointers are valid during the handler
// call only.
struct ActionReply {
  int env = 0;
  uint64_t version = 0;              // policy version that chose it
  const float* actions = nullptr;    // [K, A] in [-1, 1]
  const uint8_t* tokens = nullptr;   // [K, A] x SegmentShape::taken_bytes
  const float* log_probs = nullptr;  // [K] behaviour log-probs
  float value = 0;                   // critic estimate
};

using ActionReplyHandler =
    std::function<absl::Status(absl::Span<const ActionReply>)>;

// The rollout worker's end.
class ObservationChannel {
 public:
  virtual ~ObservationChannel() = default;
  // Where replies go; set once, before the first Submit.
  virtual void SetReplyHandler(ActionReplyHandler handler) = 0;
  // Sends one observation; fails only once the channel is closed.
  virtual absl::Status Submit(const ObservationRequest& request) = 0;
  // Sync wiring: `envs` stop submitting until a newer policy version
  // (parked) or resume (before their next Submit). Called in the order the
  // changes happen. A channel whose barrier reads the worker's gate directly
  // (one process) has nothing to tell; one across processes forwards it.
  virtual void NoteParked(absl::Span<const int> envs, bool parked) {
    (void)envs;
    (void)parked;
  }
};

// The inference server's end.
class ObservationSource {
 public:
  virtual ~ObservationSource() = default;
  // Requests waiting for inference, in arrival order.
  virtual BoundedQueue<ObservationRequest>& requests() = 0;
  // Answers the envs of one batch; the first error of a handler is returned.
  virtual absl::Status Reply(absl::Span<const ActionReply> replies) = 0;
};

class LocalObservationChannel final : public ObservationChannel,
                                      public ObservationSource {
 public:
  explicit LocalObservationChannel(const QueueOptions& options)
      : requests_(options) {}

  void SetReplyHandler(ActionReplyHandler handler) override {
    handler_ = std::move(handler);
  }
  absl::Status Submit(const ObservationRequest& request) override {
    if (requests_.Push(request) == QueueStatus::kOk) return absl::OkStatus();
    return absl::CancelledError("observation channel closed");
  }
  BoundedQueue<ObservationRequest>& requests() override { return requests_; }
  absl::Status Reply(absl::Span<const ActionReply> replies) override {
    return handler_(replies);
  }
  void Close() { requests_.Close(); }

 private:
  BoundedQueue<ObservationRequest> requests_;
  ActionReplyHandler handler_;  // set before the first request
};

}  // namespace rlvla3

#endif  // RLVLA3_RUNTIME_CHANNELS_OBSERVATION_CHANNEL_H_
