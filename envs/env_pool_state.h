// File: envs/env_pool_state.h
// -----------------------------------------------------------------------------
// What an EnvPool's threads share (internal to envs/): each env's slot, one
// action queue per worker, the state queue Recv reads, the states the latency
// model holds back, and the counters. The pool (Send, Recv, stats) and its
// workers (envs/env_worker.h) both work on it; a slot between a Send and its
// announcement is written by its worker only.
//
// Example:
//   EnvPoolState state(options);           // queues sized from the options
//   state.slots[id]->pending.store(true);  // Send's side
//   state.Announce(id);                    // a worker's, after the step
// -----------------------------------------------------------------------------
#ifndef RLVLA3_ENVS_ENV_POOL_STATE_H_
#define RLVLA3_ENVS_ENV_POOL_STATE_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <queue>
#include <random>
#include <utility>
#include <vector>

#include "envs/env_pool.h"
#include "envs/manipulation_env.h"
#include "runtime/bounded_queue.h"
#include "runtime/metrics.h"

namespace rlvla3 {

// Per-env bookkeeping; the owning worker is the only writer between a Send
// and the matching announcement.
struct EnvSlot {
  std::unique_ptr<SimEnv> env;
  ManipulationEnv* manipulation = nullptr;  // env, if a MuJoCo one
  float action[kActionDim] = {};
  std::atomic<bool> pending{false};  // an action is queued or being stepped
  bool needs_reset = false;          // the last state ended its episode
  int next_init = -1;                // init state of the next reset (-1: own)
  bool skip_images = false;          // the next step need not draw (Send's)
  EnvState state;
  std::mt19937_64 latency_rng;
  int64_t stepped = 0;  // steps asked of it, across episodes (fault plans)
  Observation damaged;  // an injected broken observation
};

// Sums over every step and reset, for EnvPoolStats' per-frame phases.
struct EnvPhaseTotals {
  std::atomic<int64_t> frames{0};
  std::atomic<int64_t> physics_ns{0}, render_ns{0}, readback_ns{0};
  std::atomic<int64_t> handoff_ns{0};  // announcing ready states

  void Add(const StepPhases& p) {
    frames.fetch_add(1, std::memory_order_relaxed);
    physics_ns.fetch_add(static_cast<int64_t>(p.physics_ms * 1e6),
                         std::memory_order_relaxed);
    render_ns.fetch_add(static_cast<int64_t>(p.render_ms * 1e6),
                        std::memory_order_relaxed);
    readback_ns.fetch_add(static_cast<int64_t>(p.readback_ms * 1e6),
                          std::memory_order_relaxed);
  }
};

struct EnvPoolState {
  using Clock = std::chrono::steady_clock;
  explicit EnvPoolState(const EnvPoolOptions& o);

  // Closes every queue and wakes the latency timer: the threads end.
  void StopAll();
  // Env `id`'s new state goes to its consumer: on_ready, else the state
  // queue. False once the state queue is closed.
  bool Announce(int id);

  const EnvPoolOptions options;
  std::vector<std::unique_ptr<EnvSlot>> slots;
  std::vector<std::unique_ptr<BoundedQueue<int>>> action_queues;  // per worker
  BoundedQueue<int> state_queue;
  // Latency model: states held back until their release time.
  std::mutex delay_mu;
  std::condition_variable delay_cv;
  std::priority_queue<std::pair<Clock::time_point, int>,
                      std::vector<std::pair<Clock::time_point, int>>,
                      std::greater<>>
      delayed;
  bool stopping = false;  // guarded by delay_mu

  Histogram step_ms;
  std::atomic<uint64_t> steps{0}, resets{0}, done{0}, truncated{0}, unstable{0},
      invalid{0}, faults{0};
  EnvPhaseTotals phases;
};

}  // namespace rlvla3

#endif  // RLVLA3_ENVS_ENV_POOL_STATE_H_
