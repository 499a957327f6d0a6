#include "runtime/metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace rlvla3 {
namespace {

void AtomicMin(std::atomic<double>& a, double v) {
  double cur = a.load(std::memory_order_relaxed);
  while (v < cur &&
         !a.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
}
void AtomicMax(std::atomic<double>& a, double v) {
  double cur = a.load(std::memory_order_relaxed);
  while (v > cur &&
         !a.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
}
void AtomicAdd(std::atomic<double>& a, double v) {
  double cur = a.load(std::memory_order_relaxed);
  while (!a.compare_exchange_weak(cur, cur + v, std::memory_order_relaxed)) {
  }
}

}  // namespace

double HistogramSnapshot::Quantile(double q) const {
  if (count == 0) return 0.0;
  const double target = std::clamp(q, 0.0, 1.0) * static_cast<double>(count);
  uint64_t seen = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    seen += counts[i];
    if (static_cast<double>(seen) >= target && counts[i] > 0) {
      return std::isinf(upper_bounds[i]) ? max : std::min(upper_bounds[i], max);
    }
  }
  return max;
}

Histogram Histogram::Linear(double first, double width, size_t n) {
  std::vector<double> b;
  for (size_t i = 0; i < n; ++i)
    b.push_back(first + width * static_cast<double>(i));
  return Histogram(std::move(b));
}

Histogram Histogram::Exponential(double start, double factor, size_t n) {
  std::vector<double> b;
  double v = start;
  for (size_t i = 0; i < n; ++i, v *= factor) b.push_back(v);
  return Histogram(std::move(b));
}

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)) {
  std::sort(bounds_.begin(), bounds_.end());
  bounds_.push_back(std::numeric_limits<double>::infinity());
  counts_ = std::make_unique<std::atomic<uint64_t>[]>(bounds_.size());
  for (size_t i = 0; i < bounds_.size(); ++i) counts_[i].store(0);
  sum_ = std::make_unique<std::atomic<double>>(0.0);
  min_ = std::make_unique<std::atomic<double>>(
      std::numeric_limits<double>::infinity());
  max_ = std::make_unique<std::atomic<double>>(
      -std::numeric_limits<double>::infinity());
  count_ = std::make_unique<std::atomic<uint64_t>>(0);
}

void Histogram::Observe(double v) {
  const size_t i = static_cast<size_t>(
      std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin());
  counts_[std::min(i, bounds_.size() - 1)].fetch_add(1,
                                                     std::memory_order_relaxed);
  AtomicAdd(*sum_, v);
  AtomicMin(*min_, v);
  AtomicMax(*max_, v);
  count_->fetch_add(1, std::memory_order_relaxed);
}

HistogramSnapshot Histogram::Snapshot() const {
  HistogramSnapshot s;
  s.upper_bounds = bounds_;
  s.counts.resize(bounds_.size());
  for (size_t i = 0; i < bounds_.size(); ++i) {
    s.counts[i] = counts_[i].load(std::memory_order_relaxed);
    s.count += s.counts[i];
  }
  s.sum = sum_->load(std::memory_order_relaxed);
  if (s.count > 0) {
    s.min = min_->load(std::memory_order_relaxed);
    s.max = max_->load(std::memory_order_relaxed);
  }
  return s;
}

double StageTimer::busy_percent() const {
  const double busy = static_cast<double>(busy_ns());
  const double total = busy + static_cast<double>(idle_ns());
  return total <= 0.0 ? 0.0 : 100.0 * busy / total;
}

double MetricsSnapshot::Get(const std::string& name, double fallback) const {
  for (const auto& [k, v] : values) {
    if (k == name) return v;
  }
  return fallback;
}

MetricsRegistry::MetricsRegistry() : start_(std::chrono::steady_clock::now()) {}

Counter& MetricsRegistry::counter(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = counters_[name];
  if (!slot) slot = std::make_unique<Counter>();
  return *slot;
}

Gauge& MetricsRegistry::gauge(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = gauges_[name];
  if (!slot) slot = std::make_unique<Gauge>();
  return *slot;
}

StageTimer& MetricsRegistry::stage(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = stages_[name];
  if (!slot) slot = std::make_unique<StageTimer>();
  return *slot;
}

Histogram& MetricsRegistry::histogram(const std::string& name,
                                      Histogram (*make)()) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = histograms_[name];
  if (!slot) slot = std::make_unique<Histogram>(make());
  return *slot;
}

Histogram& MetricsRegistry::histogram(const std::string& name,
                                      std::vector<double> upper_bounds) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = histograms_[name];
  if (!slot) slot = std::make_unique<Histogram>(std::move(upper_bounds));
  return *slot;
}

MetricsSnapshot MetricsRegistry::Snapshot() {
  const MetricsReading r = Read();
  MetricsSnapshot s;
  s.elapsed_s = r.elapsed_s;
  std::lock_guard<std::mutex> lock(mu_);
  const double dt = s.elapsed_s - last_snapshot_s_;
  for (const auto& [name, v] : r.counters) {
    const uint64_t prev = last_counter_values_[name];
    s.values.emplace_back(name, static_cast<double>(v));
    s.values.emplace_back(name + "_per_s",
                          dt > 0.0 ? static_cast<double>(v - prev) / dt : 0.0);
    last_counter_values_[name] = v;
  }
  for (const auto& [name, v] : r.gauges) s.values.emplace_back(name, v);
  for (const auto& [name, hs] : r.histograms) {
    s.values.emplace_back(name + ".count", static_cast<double>(hs.count));
    s.values.emplace_back(name + ".mean", hs.mean());
    s.values.emplace_back(name + ".p50", hs.Quantile(0.5));
    s.values.emplace_back(name + ".p99", hs.Quantile(0.99));
    s.values.emplace_back(name + ".max", hs.max);
  }
  for (const MetricsReading::Stage& st : r.stages) {
    const double total = st.busy_s + st.idle_s;
    s.values.emplace_back(st.name + ".busy_pct",
                          total <= 0.0 ? 0.0 : 100.0 * st.busy_s / total);
    s.values.emplace_back(st.name + ".busy_s", st.busy_s);
  }
  last_snapshot_s_ = s.elapsed_s;
  return s;
}

MetricsReading MetricsRegistry::Read() {
  std::lock_guard<std::mutex> lock(mu_);
  MetricsReading r;
  r.elapsed_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_)
          .count();
  for (const auto& [name, c] : counters_)
    r.counters.emplace_back(name, c->value());
  for (const auto& [name, g] : gauges_) r.gauges.emplace_back(name, g->value());
  for (const auto& [name, h] : histograms_) {
    r.histograms.emplace_back(name, h->Snapshot());
  }
  for (const auto& [name, st] : stages_) {
    r.stages.push_back({name, static_cast<double>(st->busy_ns()) * 1e-9,
                        static_cast<double>(st->idle_ns()) * 1e-9});
  }
  return r;
}

}  // namespace rlvla3
