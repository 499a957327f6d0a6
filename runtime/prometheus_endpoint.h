// File: runtime/prometheus_endpoint.h
// -----------------------------------------------------------------------------
// A role's MetricsRegistry served at http://HOST:PORT/metrics in Prometheus'
// text format, read at each scrape (no copy, no timer). The names follow
// Prometheus' conventions: every name is prefixed `rlvla3_`; counters end in
// `_total`; times are in seconds (`*_ms` histograms and `*_us` counters are
// scaled); stage timers become rlvla3_stage_{busy,idle}_seconds_total with a
// `stage` label. Constant labels (role, rank) are added to every sample.
// Built without prometheus-cpp, Start() returns UNIMPLEMENTED.
//
// Example:
//   MetricsRegistry metrics;
//   absl::StatusOr<std::unique_ptr<PrometheusEndpoint>> ep =
//       PrometheusEndpoint::Start({.host = "0.0.0.0", .port = 9464,
//                                  .labels = {{"role", "learner"}}},
//                                 &metrics);
//   // curl http://HOST:9464/metrics -> rlvla3_trained_samples_total{...} 512
// -----------------------------------------------------------------------------
#ifndef RLVLA3_RUNTIME_PROMETHEUS_ENDPOINT_H_
#define RLVLA3_RUNTIME_PROMETHEUS_ENDPOINT_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/metrics.h"

namespace rlvla3 {

struct PrometheusOptions {
  std::string host = "127.0.0.1";
  int port = 0;  // 0: a free port (see PrometheusEndpoint::port)
  std::vector<std::pair<std::string, std::string>> labels;
};

// The exposition of `reading` (what a scrape returns), labelled `labels`.
std::string PrometheusText(
    const MetricsReading& reading,
    const std::vector<std::pair<std::string, std::string>>& labels);

class PrometheusEndpoint {
 public:
  // What a role does with its config's port: nullptr for 0 (a config's 0
  // means off), else Start() and a log line "WHO: metrics at URL".
  static absl::StatusOr<std::unique_ptr<PrometheusEndpoint>> StartIfAsked(
      const PrometheusOptions& options, MetricsRegistry* metrics,
      const std::string& who);
  // Serves `metrics` (which must outlive the endpoint) on one HTTP thread,
  // one request per connection; an address in use is an error naming it.
  static absl::StatusOr<std::unique_ptr<PrometheusEndpoint>> Start(
      const PrometheusOptions& options, MetricsRegistry* metrics);
  ~PrometheusEndpoint();
  PrometheusEndpoint(const PrometheusEndpoint&) = delete;
  PrometheusEndpoint& operator=(const PrometheusEndpoint&) = delete;

  int port() const { return port_; }
  // "http://HOST:PORT/metrics".
  std::string url() const;

 private:
  struct Impl;
  PrometheusEndpoint(std::unique_ptr<Impl> impl, std::string host, int port);
  std::unique_ptr<Impl> impl_;
  std::string host_;
  int port_ = 0;
};

}  // namespace rlvla3

#endif  // RLVLA3_RUNTIME_PROMETHEUS_ENDPOINT_H_
