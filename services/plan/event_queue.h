// File: services/plan/event_queue.h
// -----------------------------------------------------------------------------
// EventQueue: the clock of a discrete-event simulation. Actions are
// scheduled at simulated times (seconds) and run in time order, ties in the
// order they were scheduled; an action may schedule more. Nothing here
// sleeps or reads a real clock.
//
// Example:
//   EventQueue q;
//   q.After(0.5, [&] { ... q.After(1.0, ...); });
//   q.RunUntil(100.0);   // q.now() is 100.0
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_PLAN_EVENT_QUEUE_H_
#define RLVLA3_SERVICES_PLAN_EVENT_QUEUE_H_

#include <cstdint>
#include <functional>
#include <queue>
#include <vector>

namespace rlvla3 {

class EventQueue {
 public:
  using Action = std::function<void()>;

  // Schedules `action` at time `t` (not before now()).
  void At(double t, Action action);
  void After(double dt, Action action) { At(now_ + dt, std::move(action)); }
  double now() const { return now_; }
  // Runs every event due at or before `until`, in order; the clock then
  // reads `until`.
  void RunUntil(double until);
  size_t pending() const { return events_.size(); }

 private:
  struct Event {
    double t;
    uint64_t seq;
    Action action;
  };
  struct Later {
    bool operator()(const Event& a, const Event& b) const {
      return a.t != b.t ? a.t > b.t : a.seq > b.seq;
    }
  };
  std::priority_queue<Event, std::vector<Event>, Later> events_;
  double now_ = 0;
  uint64_t seq_ = 0;
};

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_PLAN_EVENT_QUEUE_H_
