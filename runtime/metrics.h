// File: runtime/metrics.h
// -----------------------------------------------------------------------------
// Counters, gauges, histograms and per-stage busy/idle accounting, collected in
// a MetricsRegistry whose Snapshot() turns them into a flat list of named
// figures (rates per second included) for the JSONL/CSV writers and the
// progress line. Recording is lock-free (relaxed atomics); registration takes
// a lock and is meant for setup time, not hot paths.
//
// Example:
//   MetricsRegistry metrics;
//   Counter& frames = metrics.counter("env_frames");
//   StageTimer& env = metrics.stage("env_step");
//   { StageTimer::Scope busy(env); StepEnv(); frames.Add(); }
//   MetricsSnapshot s = metrics.Snapshot();  // env_frames, env_frames_per_s,
//   ...
// -----------------------------------------------------------------------------
#ifndef RLVLA3_RUNTIME_METRICS_H_
#define RLVLA3_RUNTIME_METRICS_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"

namespace rlvla3 {

// A monotonically increasing count.
class Counter {
 public:
  void Add(uint64_t n = 1) { value_.fetch_add(n, std::memory_order_relaxed); }
  uint64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

// A value that goes up and down (queue depth, policy lag).
class Gauge {
 public:
  void Set(double v) { value_.store(v, std::memory_order_relaxed); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

// A copy of a histogram's state.
struct HistogramSnapshot {
  std::vector<double>
      upper_bounds;  // bucket i holds values <= upper_bounds[i]; last is +inf
  std::vector<uint64_t> counts;  // same length as upper_bounds
  uint64_t count = 0;
  double sum = 0.0;
  double min = 0.0;  // 0 when empty
  double max = 0.0;  // 0 when empty

  double mean() const {
    return count == 0 ? 0.0 : sum / static_cast<double>(count);
  }
  // Upper bound of the bucket holding quantile q in [0, 1] (max for the last
  // bucket).
  double Quantile(double q) const;
};

// Fixed-bucket histogram; Observe() is lock-free.
class Histogram {
 public:
  // Buckets with upper bounds first, first+width, ... (n of them), plus
  // overflow. Linear(1, 1, 64) counts integer batch sizes 1..64 exactly.
  static Histogram Linear(double first, double width, size_t n);
  // Buckets with upper bounds start, start*factor, ... (n of them), plus
  // overflow.
  static Histogram Exponential(double start, double factor, size_t n);

  explicit Histogram(std::vector<double> upper_bounds);
  Histogram(Histogram&&) = default;

  void Observe(double v);
  HistogramSnapshot Snapshot() const;

 private:
  std::vector<double> bounds_;  // ascending, last is +inf
  std::unique_ptr<std::atomic<uint64_t>[]> counts_;
  std::unique_ptr<std::atomic<double>> sum_;
  std::unique_ptr<std::atomic<double>> min_;
  std::unique_ptr<std::atomic<double>> max_;
  std::unique_ptr<std::atomic<uint64_t>> count_;
};

// Time one pipeline stage spends working ("busy") versus waiting on its input
// or output ("idle"). One thread or many may add to it.
class StageTimer {
 public:
  // Adds the time from construction to destruction as busy time.
  class Scope {
   public:
    explicit Scope(StageTimer& t)
        : t_(t), t0_(std::chrono::steady_clock::now()) {}
    ~Scope() { t_.AddBusy(std::chrono::steady_clock::now() - t0_); }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    StageTimer& t_;
    std::chrono::steady_clock::time_point t0_;
  };
  // Adds the time from construction to destruction as idle (waiting) time.
  class IdleScope {
   public:
    explicit IdleScope(StageTimer& t)
        : t_(t), t0_(std::chrono::steady_clock::now()) {}
    ~IdleScope() { t_.AddIdle(std::chrono::steady_clock::now() - t0_); }
    IdleScope(const IdleScope&) = delete;
    IdleScope& operator=(const IdleScope&) = delete;

   private:
    StageTimer& t_;
    std::chrono::steady_clock::time_point t0_;
  };

  void AddBusy(std::chrono::nanoseconds d) {
    busy_ns_.fetch_add(d.count(), std::memory_order_relaxed);
  }
  void AddIdle(std::chrono::nanoseconds d) {
    idle_ns_.fetch_add(d.count(), std::memory_order_relaxed);
  }
  int64_t busy_ns() const { return busy_ns_.load(std::memory_order_relaxed); }
  int64_t idle_ns() const { return idle_ns_.load(std::memory_order_relaxed); }
  // busy / (busy + idle) in percent; 0 before anything was recorded.
  double busy_percent() const;

 private:
  std::atomic<int64_t> busy_ns_{0};
  std::atomic<int64_t> idle_ns_{0};
};

// A flat, ordered list of named figures taken at one instant.
struct MetricsSnapshot {
  double elapsed_s = 0.0;  // seconds since the registry was created
  std::vector<std::pair<std::string, double>> values;

  // The value named `name`, or `fallback` if absent.
  double Get(const std::string& name, double fallback = 0.0) const;
};

// Every metric's raw state at one instant, in name order within each kind:
// what an exporter reads (Snapshot's rates and quantiles are derived).
struct MetricsReading {
  struct Stage {
    std::string name;
    double busy_s = 0.0;
    double idle_s = 0.0;
  };
  double elapsed_s = 0.0;
  std::vector<std::pair<std::string, uint64_t>> counters;
  std::vector<std::pair<std::string, double>> gauges;
  std::vector<std::pair<std::string, HistogramSnapshot>> histograms;
  std::vector<Stage> stages;
};

// Owns named metrics; references it hands out stay valid for its lifetime.
class MetricsRegistry {
 public:
  MetricsRegistry();

  // Returns the metric called `name`, creating it on first use.
  Counter& counter(const std::string& name);
  Gauge& gauge(const std::string& name);
  StageTimer& stage(const std::string& name);
  // `make` is called only when the histogram does not exist yet.
  Histogram& histogram(const std::string& name, Histogram (*make)());
  Histogram& histogram(const std::string& name,
                       std::vector<double> upper_bounds);

  // Figures, in name order within each kind: counters as `name` and
  // `name_per_s` (rate since the previous Snapshot), gauges as `name`,
  // histograms as `name.count/.mean/.p50/.p99/.max`, stages as
  // `name.busy_pct` and `name.busy_s`.
  MetricsSnapshot Snapshot();
  // The raw state, without touching Snapshot's rate baseline (a scrape may
  // come at any time from another thread).
  MetricsReading Read();

 private:
  std::mutex mu_;
  const std::chrono::steady_clock::time_point start_;
  std::map<std::string, std::unique_ptr<Counter>> counters_
      ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::unique_ptr<Gauge>> gauges_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::unique_ptr<Histogram>> histograms_
      ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::unique_ptr<StageTimer>> stages_
      ABSL_GUARDED_BY(mu_);
  std::map<std::string, uint64_t> last_counter_values_ ABSL_GUARDED_BY(mu_);
  double last_snapshot_s_ ABSL_GUARDED_BY(mu_) = 0.0;
};

}  // namespace rlvla3

#endif  // RLVLA3_RUNTIME_METRICS_H_
