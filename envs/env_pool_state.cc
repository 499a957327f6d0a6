#include "envs/env_pool_state.h"

namespace rlvla3 {
namespace {

// Ready env ids in flight at most: every env once, plus close tokens.
constexpr size_t kStateQueueSlack = 8;

}  // namespace

EnvPoolState::EnvPoolState(const EnvPoolOptions& o)
    : options(o),
      state_queue(QueueOptions{
          static_cast<size_t>(o.num_envs) + kStateQueueSlack,
          OverflowPolicy::kBlock, static_cast<size_t>(o.num_threads) + 2}),
      step_ms(Histogram::Exponential(0.25, 1.5, 24)) {}

void EnvPoolState::StopAll() {
  for (auto& q : action_queues) q->Close();
  state_queue.Close();
  {
    std::lock_guard<std::mutex> lock(delay_mu);
    stopping = true;
  }
  delay_cv.notify_all();
}

bool EnvPoolState::Announce(int id) {
  if (options.on_ready) {
    options.on_ready(id);
    return true;
  }
  return state_queue.Push(id) == QueueStatus::kOk;
}

}  // namespace rlvla3
