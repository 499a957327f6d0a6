// File: runtime/engine/trajectory.h
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
//   Segment* s = pool.Acquire();        // blocks while all are in use
//   std::memcpy(s->agentview_at(s->n), obs.agentview.data(), s->image_bytes);
//   ...
//   pool.Release(s);                    // learner, after training on it
// -----------------------------------------------------------------------------
#ifndef RLVLA3_RUNTIME_ENGINE_TRAJECTORY_H_
#define RLVLA3_RUNTIME_ENGINE_TRAJECTORY_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/bounded_queue.h"

namespace rlvla3 {

struct SegmentShape {
  int width = 64, height = 64;
  int chunk = 4;       // K
  int action_dim = 7;  // A
  int proprio_dim = 8;
  int capacity = 16;  // decisions per segment
};

struct Segment {
  explicit Segment(const SegmentShape& s);
  void Clear();

  uint8_t* agentview_at(int t) { return agentview.data() + t * image_bytes; }
  uint8_t* wrist_at(int t) { return wrist.data() + t * image_bytes; }
  float* proprio_at(int t) { return proprio.data() + t * shape.proprio_dim; }
  uint8_t* tokens_at(int t) {
    return tokens.data() + t * shape.chunk * shape.action_dim;
  }
  float* log_probs_at(int t) { return log_probs.data() + t * shape.chunk; }
  bool full() const { return n >= shape.capacity; }
  uint64_t min_version() const;
  uint64_t max_version() const;

  SegmentShape shape;
  size_t image_bytes;

  // Identity.
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
  std::vector<uint8_t> agentview, wrist;  // [., H, W, 3]
  std::vector<float> proprio;             // [., P]
  std::vector<uint8_t> tokens;            // [., K, A] bins (0..255)
  std::vector<float> log_probs;           // [., K] behaviour log-probs
  std::vector<float> values;              // behaviour critic value
  std::vector<float> rewards;             // summed over executed chunk steps
  std::vector<uint8_t> terminal;          // episode ended after this decision
  std::vector<uint8_t> executed;          // chunk steps actually stepped
  std::vector<uint64_t> versions;         // behaviour policy version
  // Learner scratch.
  std::vector<float> advantages, returns;
  int unconsumed = 0;  // samples not yet trained on
};

// A fixed set of segments and a free list; Acquire blocks while all are out.
class SegmentPool {
 public:
  SegmentPool(const SegmentShape& shape, int count);
  // Null once the pool is closed.
  Segment* Acquire();
  void Release(Segment* s);
  void Close() { free_.Close(); }
  int size() const { return static_cast<int>(all_.size()); }
  size_t available() const { return free_.depth(); }

 private:
  std::vector<std::unique_ptr<Segment>> all_;
  BoundedQueue<Segment*> free_;
};

}  // namespace rlvla3

#endif  // RLVLA3_RUNTIME_ENGINE_TRAJECTORY_H_
