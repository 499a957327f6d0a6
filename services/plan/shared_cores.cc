#include "services/plan/shared_cores.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace rlvla3 {
namespace {

// A job with less than this left to run (seconds at its rate) is done: the
// rounding of rate x time, and a clock that cannot step by less.
constexpr double kDone = 1e-9;

}  // namespace

double NiceWeight(int nice) { return std::pow(1.25, -nice); }

SharedCores::SharedCores(EventQueue* clock, double cores)
    : clock_(clock), cores_(cores) {}

void SharedCores::Start(double work, double threads, double weight,
                        std::function<void()> done) {
  Advance();
  jobs_.push_back(Job{std::max(0.0, work), std::max(threads, 1e-9),
                      std::max(weight, 1e-9), 1, std::move(done)});
  Share();
  Reschedule();
}

void SharedCores::Advance() {
  const double dt = clock_->now() - last_;
  last_ = clock_->now();
  if (dt <= 0) return;
  for (Job& j : jobs_) {
    j.remaining -= j.rate * dt;
    core_seconds_ += j.rate * j.threads * dt;
  }
}

// Water-filling: a thread of weight w runs at min(1, level * w) of a core,
// the level set so that the threads use every core (or each has one).
void SharedCores::Share() {
  double demand = 0;
  for (const Job& j : jobs_) demand += j.threads;
  if (cores_ <= 0 || demand <= cores_) {
    for (Job& j : jobs_) j.rate = 1;
    return;
  }
  std::vector<bool> capped(jobs_.size(), false);
  double left = cores_;
  double level = 0;
  for (bool changed = true; changed;) {
    changed = false;
    double weights = 0;
    for (size_t i = 0; i < jobs_.size(); ++i)
      if (!capped[i]) weights += jobs_[i].threads * jobs_[i].weight;
    if (weights <= 0) break;
    level = left / weights;
    for (size_t i = 0; i < jobs_.size(); ++i) {
      if (!capped[i] && level * jobs_[i].weight >= 1) {
        capped[i] = true;
        left -= jobs_[i].threads;
        changed = true;
      }
    }
  }
  for (size_t i = 0; i < jobs_.size(); ++i)
    jobs_[i].rate = capped[i] ? 1 : level * jobs_[i].weight;
}

void SharedCores::Reschedule() {
  ++generation_;
  double soonest = std::numeric_limits<double>::infinity();
  for (const Job& j : jobs_) soonest = std::min(soonest, j.remaining / j.rate);
  if (jobs_.empty()) return;
  const uint64_t g = generation_;
  clock_->After(std::max(0.0, soonest), [this, g] { Finish(g); });
}

void SharedCores::Finish(uint64_t generation) {
  if (generation != generation_) return;  // superseded by a later change
  Advance();
  std::vector<std::function<void()>> finished;
  for (size_t i = 0; i < jobs_.size();) {
    if (jobs_[i].remaining <= kDone * jobs_[i].rate) {
      finished.push_back(std::move(jobs_[i].done));
      jobs_[i] = std::move(jobs_.back());
      jobs_.pop_back();
    } else {
      ++i;
    }
  }
  Share();
  Reschedule();
  for (std::function<void()>& done : finished) done();
}

}  // namespace rlvla3
