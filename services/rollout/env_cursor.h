// File: services/rollout/env_cursor.h
// -----------------------------------------------------------------------------
// EnvCursor: what a rollout worker knows about one env between decisions
// (its segment, the decision in flight, its admission units, its episode),
// and Mix, the hash that names GRPO groups and draws initial states. Private
// to RolloutWorker (rollout_worker.cc).
//
// Example:
//   std::vector<EnvCursor> cursors(num_envs);
//   cursors[env].decisions++;  // one more PPO admission unit taken
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_ROLLOUT_ENV_CURSOR_H_
#define RLVLA3_SERVICES_ROLLOUT_ENV_CURSOR_H_

#include <cstdint>

#include "envs/sim_env.h"
#include "runtime/channels/rollout_segment.h"

namespace rlvla3 {

inline constexpr int kMaxChunk =
    64;  // policy.chunk's upper bound in the schema

// What the worker knows about one env between decisions. Touched by one
// thread at a time: the env thread that stepped it, the thread delivering its
// action reply, or the publisher releasing it from the gate; the channels
// between them order the accesses.
struct EnvCursor {
  RolloutSegment* seg = nullptr;
  int slot = -1;           // decision in flight (slot in seg), -1: none
  int chunk_pos = 0;       // chunk steps executed of the decision in flight
  int64_t decisions = 0;   // decisions submitted (PPO admission unit)
  int64_t episodes = 0;    // episodes admitted (GRPO admission unit)
  int64_t resets = 0;      // PPO: episodes begun (their initial states)
  int64_t segments = 0;    // segments emitted
  bool resetting = false;  // a reset was requested; next ready is its obs
  float episode_return = 0;
  bool episode_fresh = true;         // no decision of this episode inferred yet
  uint64_t episode_version = 0;      // behaviour version of its first decision
  uint64_t episode_start_frame = 0;  // env frames (all envs) when it began
  uint64_t env_frames = 0;           // this env's own frames so far
  uint64_t episode_start_env_frame = 0;
  int64_t submit_ns = 0;
  int task = 0;
  float actions[kMaxChunk * kActionDim] = {};
};

inline uint64_t Mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_ROLLOUT_ENV_CURSOR_H_
