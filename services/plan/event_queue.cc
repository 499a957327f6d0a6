#include "services/plan/event_queue.h"

#include <algorithm>
#include <utility>

namespace rlvla3 {

void EventQueue::At(double t, Action action) {
  events_.push(Event{std::max(t, now_), seq_++, std::move(action)});
}

void EventQueue::RunUntil(double until) {
  while (!events_.empty() && events_.top().t <= until) {
    Event e = events_.top();
    events_.pop();
    now_ = e.t;
    e.action();
  }
  now_ = std::max(now_, until);
}

}  // namespace rlvla3
