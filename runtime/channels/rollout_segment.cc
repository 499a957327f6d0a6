#include "runtime/channels/rollout_segment.h"

#include <algorithm>
#include <limits>

namespace rlvla3 {

RolloutSegment::RolloutSegment(const SegmentShape& s)
    : shape(s), camera_bytes(static_cast<size_t>(s.width) * s.height * 3) {
  const size_t obs = static_cast<size_t>(s.capacity) + 1;
  const size_t cap = static_cast<size_t>(s.capacity);
  images.resize(static_cast<size_t>(s.num_cameras()) * obs * camera_bytes);
  proprio.resize(obs * s.proprio_dim);
  tokens.resize(cap * taken_row());
  log_probs.resize(cap * s.chunk);
  values.resize(cap);
  rewards.resize(cap);
  terminal.resize(cap);
  executed.resize(cap);
  versions.resize(cap);
}

void RolloutSegment::Clear() {
  n = 0;
  has_bootstrap = false;
  episode_end = false;
  success = false;
  episode_return = 0;
  group = 0;
  std::fill(rewards.begin(), rewards.end(), 0.0f);
  std::fill(terminal.begin(), terminal.end(), 0);
}

uint64_t RolloutSegment::min_version() const {
  uint64_t v = std::numeric_limits<uint64_t>::max();
  for (int t = 0; t < n; ++t) v = std::min(v, versions[t]);
  return n == 0 ? 0 : v;
}

uint64_t RolloutSegment::max_version() const {
  uint64_t v = 0;
  for (int t = 0; t < n; ++t) v = std::max(v, versions[t]);
  return v;
}

SegmentPool::SegmentPool(const SegmentShape& shape, int count)
    : free_(QueueOptions{static_cast<size_t>(count), OverflowPolicy::kBlock,
                         64}) {
  for (int i = 0; i < count; ++i) {
    all_.push_back(std::make_unique<RolloutSegment>(shape));
    free_.Push(all_.back().get());
  }
}

RolloutSegment* SegmentPool::Acquire() {
  RolloutSegment* s = nullptr;
  if (free_.Pop(s) != QueueStatus::kOk) return nullptr;
  s->Clear();
  return s;
}

RolloutSegment* SegmentPool::TryAcquire() {
  RolloutSegment* s = nullptr;
  if (free_.Pop(s, absl::ZeroDuration()) != QueueStatus::kOk) return nullptr;
  s->Clear();
  return s;
}

void SegmentPool::Release(RolloutSegment* s) { free_.Push(s); }

}  // namespace rlvla3
