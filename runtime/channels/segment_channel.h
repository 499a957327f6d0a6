// File: runtime/channels/segment_channel.h
// -----------------------------------------------------------------------------
// Level 2 channel: rollout workers push finished trajectory segments; the
// learner pops them as they arrive and releases each one once it has trained
// on it. Two ends:
//   SegmentChannel  the rollout worker's end: Acquire an empty segment, fill
//                   it, Push it (ownership passes; blocks while the channel
//                   is full: the overflow policy is "block", segments are
//                   never dropped in transit);
//   SegmentSource   the learner's end: PopBulk and Release.
// LocalSegmentChannel implements both in one process over a fixed pool of
// preallocated segments (nothing is allocated per segment) and a bounded
// queue of pointers. A gRPC implementation serialises RolloutSegment into its
// proto message and keeps a pool at each end.
//
// Example:
//   LocalSegmentChannel ch(shape, /*count=*/64, queue_options);
//   RolloutSegment* s = ch.Acquire();   // worker: fill, then
//   ch.Push(s);
//   size_t n; ch.PopBulk(buf, 16, absl::Milliseconds(20), &n);  // learner
//   ch.Release(buf[0]);                 // after training on it
// -----------------------------------------------------------------------------
#ifndef RLVLA3_RUNTIME_CHANNELS_SEGMENT_CHANNEL_H_
#define RLVLA3_RUNTIME_CHANNELS_SEGMENT_CHANNEL_H_

#include <cstddef>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "runtime/bounded_queue.h"
#include "runtime/channels/rollout_segment.h"

namespace rlvla3 {

// The rollout worker's end.
class SegmentChannel {
 public:
  virtual ~SegmentChannel() = default;
  // An empty segment to fill; blocks while none is free; null once closed
  // and none is free.
  virtual RolloutSegment* Acquire() = 0;
  // Sends a filled segment (ownership passes, also on error). Blocks while
  // the channel is full; fails only once it is closed.
  virtual absl::Status Push(RolloutSegment* segment) = 0;
};

// The learner's end.
class SegmentSource {
 public:
  virtual ~SegmentSource() = default;
  // Up to `max` segments, waiting at most `timeout` for the first; kClosed
  // once the channel is closed and drained.
  virtual QueueStatus PopBulk(RolloutSegment** out, size_t max,
                              absl::Duration timeout, size_t* n) = 0;
  // Gives back a segment the learner has finished with.
  virtual void Release(RolloutSegment* segment) = 0;
  // Segments waiting for the learner.
  virtual size_t depth() const = 0;
};

class LocalSegmentChannel final : public SegmentChannel, public SegmentSource {
 public:
  // `options.overflow` must be kBlock (checked by the caller's options).
  LocalSegmentChannel(const SegmentShape& shape, int count,
                      const QueueOptions& options)
      : pool_(shape, count), queue_(options) {}

  RolloutSegment* Acquire() override { return pool_.Acquire(); }
  absl::Status Push(RolloutSegment* segment) override {
    if (queue_.Push(segment) == QueueStatus::kOk) return absl::OkStatus();
    pool_.Release(segment);
    return absl::CancelledError("segment channel closed");
  }
  QueueStatus PopBulk(RolloutSegment** out, size_t max, absl::Duration timeout,
                      size_t* n) override {
    return queue_.PopBulk(out, max, timeout, n);
  }
  void Release(RolloutSegment* segment) override { pool_.Release(segment); }
  size_t depth() const override { return queue_.depth(); }
  // Wakes every waiter: Acquire returns what is free, then null; Push
  // fails; PopBulk drains.
  void Close() {
    queue_.Close();
    pool_.Close();
  }

 private:
  SegmentPool pool_;
  BoundedQueue<RolloutSegment*> queue_;
};

}  // namespace rlvla3

#endif  // RLVLA3_RUNTIME_CHANNELS_SEGMENT_CHANNEL_H_
