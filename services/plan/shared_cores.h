// File: services/plan/shared_cores.h
// -----------------------------------------------------------------------------
// SharedCores: a fixed number of CPU cores shared by the jobs running on them,
// as the kernel's fair scheduler shares them (processor sharing, weighted by
// nice level). A job is a piece of work measured alone (its wall seconds with
// its own threads on an idle machine); while the threads of all running jobs
// want more cores than there are, each thread gets a share proportional to
// its weight, never more than one core. With cores <= 0 every job runs at its
// measured speed (each stage on hardware of its own).
//
// Example:
//   EventQueue q;
//   SharedCores cpu(&q, /*cores=*/2);
//   cpu.Start(/*work=*/0.010, /*threads=*/1, /*weight=*/1, [&] { ... });
//   q.RunUntil(1.0);
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_PLAN_SHARED_CORES_H_
#define RLVLA3_SERVICES_PLAN_SHARED_CORES_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "services/plan/event_queue.h"

namespace rlvla3 {

// The fair scheduler's weight of a nice level relative to nice 0 (each level
// about 1.25x: nice 10 is about a tenth).
double NiceWeight(int nice);

class SharedCores {
 public:
  SharedCores(EventQueue* clock, double cores);

  // Runs `work` seconds of a job with `threads` threads of `weight` each;
  // `done` runs on the clock when it finishes.
  void Start(double work, double threads, double weight,
             std::function<void()> done);
  // Core-seconds used so far (at the last change).
  double core_seconds() const { return core_seconds_; }
  size_t running() const { return jobs_.size(); }

 private:
  struct Job {
    double remaining, threads, weight, rate = 1;
    std::function<void()> done;
  };
  void Advance();     // progress every job to now
  void Share();       // each job's rate now
  void Reschedule();  // the next finish on the clock
  void Finish(uint64_t generation);

  EventQueue* clock_;
  const double cores_;
  std::vector<Job> jobs_;
  double last_ = 0, core_seconds_ = 0;
  uint64_t generation_ = 0;
};

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_PLAN_SHARED_CORES_H_
