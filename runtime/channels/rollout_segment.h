// File: runtime/channels/rollout_segment.h
// -----------------------------------------------------------------------------
// Level 2 payload: a trajectory segment of one env, filled decision by
// decision by the rollout side and consumed sample by sample by the learner.
// A decision is one observation -> one action chunk (K steps, of which
// `executed` were stepped). Storage is preallocated in a SegmentPool and
// recycled: the trajectory queue carries pointers, nothing is allocated per
// sample. Slot `n` (one past the last decision) holds the bootstrap
// observation for the learner's value estimate when the segment did not end
// its episode.
//
// Example:
//   SegmentPool pool(shape, /*count=*/64);
//   RolloutSegment* s = pool.Acquire();        // blocks while all are in use
//   for (int c = 0; c < shape.num_cameras(); ++c)
//     std::memcpy(s->camera_at(c, s->n), obs_camera[c], s->camera_bytes);
//   ...
//   pool.Release(s);                    // learner, after training on it
// -----------------------------------------------------------------------------
#ifndef RLVLA3_RUNTIME_CHANNELS_ROLLOUT_SEGMENT_H_
#define RLVLA3_RUNTIME_CHANNELS_ROLLOUT_SEGMENT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/bounded_queue.h"
#include "runtime/camera_limits.h"

namespace rlvla3 {

struct SegmentShape {
  int width = 64, height = 64;
  // The run's cameras, in order (env.cameras): C = num_cameras() images per
  // observation, named so on the wire.
  std::vector<std::string> cameras = {"agentview", "wrist"};
  int chunk = 4;       // K
  int action_dim = 7;  // A
  int proprio_dim = 8;
  int capacity = 16;  // decisions per segment
  // Bytes per action dimension taken: 1, a bin index (every bin count <=
  // 256); 4, a float32 (a Gaussian head's sample, or a bin index above 255).
  int taken_bytes = 1;
  int num_cameras() const { return static_cast<int>(cameras.size()); }
};

struct RolloutSegment {
  explicit RolloutSegment(const SegmentShape& s);
  void Clear();

  // Camera c's image of observation t ([H, W, 3]).
  uint8_t* camera_at(int c, int t) {
    return images.data() + (static_cast<size_t>(c) * rows() + t) * camera_bytes;
  }
  float* proprio_at(int t) { return proprio.data() + t * shape.proprio_dim; }
  uint8_t* tokens_at(int t) { return tokens.data() + t * taken_row(); }
  float* log_probs_at(int t) { return log_probs.data() + t * shape.chunk; }
  const uint8_t* camera_at(int c, int t) const {
    return images.data() + (static_cast<size_t>(c) * rows() + t) * camera_bytes;
  }
  // Observations one camera holds: capacity decisions + the bootstrap.
  size_t rows() const { return static_cast<size_t>(shape.capacity) + 1; }
  const float* proprio_at(int t) const {
    return proprio.data() + t * shape.proprio_dim;
  }
  const uint8_t* tokens_at(int t) const {
    return tokens.data() + t * taken_row();
  }
  // Bytes of one decision's taken chunk (K x A x taken_bytes).
  size_t taken_row() const {
    return static_cast<size_t>(shape.chunk) * shape.action_dim *
           shape.taken_bytes;
  }
  const float* log_probs_at(int t) const {
    return log_probs.data() + t * shape.chunk;
  }
  bool full() const { return n >= shape.capacity; }
  uint64_t min_version() const;
  uint64_t max_version() const;

  SegmentShape shape;
  size_t camera_bytes;  // one camera's image: H x W x 3

  // Identity.
  uint64_t run_id = 0;  // the run (or worker) that produced it
  int env_id = 0;
  int task = 0;            // row of the engine's instruction table
  int64_t index = 0;       // segments emitted by this env before this one
  uint64_t group = 0;      // GRPO: episodes with the same group share an
                           // initial state (group id)
  int64_t enqueue_ns = 0;  // when it entered the trajectory queue
  // Filled decisions and how the segment ends.
  int n = 0;
  bool has_bootstrap = false;  // slot n holds the next observation
  bool episode_end = false;    // the last decision ended its episode
  bool success = false;        // ... in success
  float episode_return = 0;    // GRPO: the whole episode's return

  // Per-decision storage ([capacity + 1] observations, [capacity] the rest).
  // Camera-major: camera c's observations are one [., H, W, 3] run.
  std::vector<uint8_t> images;     // [C, ., H, W, 3]
  std::vector<float> proprio;      // [., P]
  std::vector<uint8_t> tokens;     // [., K, A] x taken_bytes
  std::vector<float> log_probs;    // [., K] behaviour log-probs
  std::vector<float> values;       // behaviour critic value
  std::vector<float> rewards;      // summed over executed chunk steps
  std::vector<uint8_t> terminal;   // episode ended after this decision
  std::vector<uint8_t> executed;   // chunk steps actually stepped
  std::vector<uint64_t> versions;  // behaviour policy version
};

// A fixed set of segments (the in-process segment channel's storage) and a free
// list; Acquire blocks while all are out.
class SegmentPool {
 public:
  SegmentPool(const SegmentShape& shape, int count);
  // Null once the pool is closed.
  RolloutSegment* Acquire();
  // A free segment, or null at once when none is (never blocks).
  RolloutSegment* TryAcquire();
  void Release(RolloutSegment* s);
  void Close() { free_.Close(); }
  int size() const { return static_cast<int>(all_.size()); }
  size_t available() const { return free_.depth(); }

 private:
  std::vector<std::unique_ptr<RolloutSegment>> all_;
  BoundedQueue<RolloutSegment*> free_;
};

}  // namespace rlvla3

#endif  // RLVLA3_RUNTIME_CHANNELS_ROLLOUT_SEGMENT_H_
