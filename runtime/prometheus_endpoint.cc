#include "runtime/prometheus_endpoint.h"

#include <spdlog/spdlog.h>

#include <exception>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

#ifdef RLVLA3_HAVE_PROMETHEUS
#include <prometheus/metric_family.h>
#include <prometheus/text_serializer.h>

#include "runtime/scrape_server.h"
#endif

namespace rlvla3 {

#ifdef RLVLA3_HAVE_PROMETHEUS
namespace {

using Labels = std::vector<std::pair<std::string, std::string>>;
using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

// A registry name in Prometheus' alphabet ([a-zA-Z0-9_]), prefixed.
std::string Sanitized(const std::string& name) {
  std::string out = "rlvla3_";
  for (char ch : name) {
    const bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                    (ch >= '0' && ch <= '9') || ch == '_';
    out.push_back(ok ? ch : '_');
  }
  return out;
}

// `name` without `suffix` if it ends with it; sets *hit.
std::string WithoutSuffix(const std::string& name, const char* suffix,
                          bool* hit) {
  *hit = absl::EndsWith(name, suffix);
  return *hit ? name.substr(0, name.size() - std::string(suffix).size()) : name;
}

ClientMetric Labelled(const Labels& labels) {
  ClientMetric m;
  for (const auto& [k, v] : labels) m.label.push_back({k, v});
  return m;
}

MetricFamily Family(std::string name, MetricType type, std::string help) {
  MetricFamily f;
  f.name = std::move(name);
  f.type = type;
  f.help = std::move(help);
  return f;
}

void AddCounters(const MetricsReading& r, const Labels& labels,
                 std::vector<MetricFamily>* out) {
  for (const auto& [name, value] : r.counters) {
    bool micros = false;
    const std::string base = WithoutSuffix(name, "_us", &micros);
    MetricFamily f =
        Family(Sanitized(base) + (micros ? "_seconds_total" : "_total"),
               MetricType::Counter, "rl-vla3 counter " + name);
    ClientMetric m = Labelled(labels);
    m.counter.value = static_cast<double>(value) * (micros ? 1e-6 : 1.0);
    f.metric.push_back(std::move(m));
    out->push_back(std::move(f));
  }
}

void AddGauges(const MetricsReading& r, const Labels& labels,
               std::vector<MetricFamily>* out) {
  MetricFamily up = Family("rlvla3_uptime_seconds", MetricType::Gauge,
                           "seconds since the role's metrics started");
  up.metric.push_back(Labelled(labels));
  up.metric.back().gauge.value = r.elapsed_s;
  out->push_back(std::move(up));
  for (const auto& [name, value] : r.gauges) {
    MetricFamily f =
        Family(Sanitized(name), MetricType::Gauge, "rl-vla3 gauge " + name);
    f.metric.push_back(Labelled(labels));
    f.metric.back().gauge.value = value;
    out->push_back(std::move(f));
  }
}

void AddHistograms(const MetricsReading& r, const Labels& labels,
                   std::vector<MetricFamily>* out) {
  for (const auto& [name, h] : r.histograms) {
    bool millis = false;
    const std::string base = WithoutSuffix(name, "_ms", &millis);
    const double scale = millis ? 1e-3 : 1.0;
    MetricFamily f = Family(Sanitized(base) + (millis ? "_seconds" : ""),
                            MetricType::Histogram, "rl-vla3 histogram " + name);
    ClientMetric m = Labelled(labels);
    m.histogram.sample_count = h.count;
    m.histogram.sample_sum = h.sum * scale;
    uint64_t cumulative = 0;
    for (size_t i = 0; i < h.upper_bounds.size(); ++i) {
      cumulative += h.counts[i];
      m.histogram.bucket.push_back({cumulative, h.upper_bounds[i] * scale});
    }
    f.metric.push_back(std::move(m));
    out->push_back(std::move(f));
  }
}

void AddStages(const MetricsReading& r, const Labels& labels,
               std::vector<MetricFamily>* out) {
  if (r.stages.empty()) return;
  MetricFamily busy =
      Family("rlvla3_stage_busy_seconds_total", MetricType::Counter,
             "seconds a pipeline stage spent working");
  MetricFamily idle =
      Family("rlvla3_stage_idle_seconds_total", MetricType::Counter,
             "seconds a pipeline stage spent waiting on its input or output");
  for (const MetricsReading::Stage& s : r.stages) {
    Labels with_stage = labels;
    with_stage.emplace_back("stage", s.name);
    busy.metric.push_back(Labelled(with_stage));
    busy.metric.back().counter.value = s.busy_s;
    idle.metric.push_back(Labelled(with_stage));
    idle.metric.back().counter.value = s.idle_s;
  }
  out->push_back(std::move(busy));
  out->push_back(std::move(idle));
}

std::vector<MetricFamily> Families(const MetricsReading& r,
                                   const Labels& labels) {
  std::vector<MetricFamily> out;
  AddCounters(r, labels, &out);
  AddGauges(r, labels, &out);
  AddHistograms(r, labels, &out);
  AddStages(r, labels, &out);
  return out;
}

}  // namespace

std::string PrometheusText(const MetricsReading& reading,
                           const Labels& labels) {
  return prometheus::TextSerializer().Serialize(Families(reading, labels));
}

// Served by a ScrapeServer (scrape_server.h: one thread, never held by one
// client; why not prometheus-cpp's exposer is said there).
struct PrometheusEndpoint::Impl {
  std::unique_ptr<ScrapeServer> server;
};

absl::StatusOr<std::unique_ptr<PrometheusEndpoint>> PrometheusEndpoint::Start(
    const PrometheusOptions& options, MetricsRegistry* metrics) {
  ScrapeServerOptions so;
  so.host = options.host;
  so.port = options.port;
  const Labels labels = options.labels;
  absl::StatusOr<std::unique_ptr<ScrapeServer>> server =
      ScrapeServer::Start(so, [metrics, labels](const std::string& path) {
        const bool scrape =
            path == "/metrics" || absl::StartsWith(path, "/metrics?");
        if (!scrape) {
          return ScrapeServer::Response{404, "text/plain", "not found\n"};
        }
        return ScrapeServer::Response{
            200, "text/plain; version=0.0.4; charset=utf-8",
            PrometheusText(metrics->Read(), labels)};
      });
  if (!server.ok()) return server.status();
  auto impl = std::make_unique<Impl>();
  const int port = (*server)->port();
  impl->server = *std::move(server);
  return std::unique_ptr<PrometheusEndpoint>(
      new PrometheusEndpoint(std::move(impl), options.host, port));
}

#else  // !RLVLA3_HAVE_PROMETHEUS

std::string PrometheusText(
    const MetricsReading&,
    const std::vector<std::pair<std::string, std::string>>&) {
  return "";
}

struct PrometheusEndpoint::Impl {};

absl::StatusOr<std::unique_ptr<PrometheusEndpoint>> PrometheusEndpoint::Start(
    const PrometheusOptions&, MetricsRegistry*) {
  return absl::UnimplementedError(
      "metrics.prometheus_port: this build has no prometheus-cpp "
      "(install prometheus-cpp-dev and rebuild)");
}

#endif  // RLVLA3_HAVE_PROMETHEUS

absl::StatusOr<std::unique_ptr<PrometheusEndpoint>>
PrometheusEndpoint::StartIfAsked(const PrometheusOptions& options,
                                 MetricsRegistry* metrics,
                                 const std::string& who) {
  if (options.port == 0) return nullptr;
  absl::StatusOr<std::unique_ptr<PrometheusEndpoint>> ep =
      Start(options, metrics);
  if (ep.ok()) spdlog::info("{}: metrics at {}", who, (*ep)->url());
  return ep;
}

PrometheusEndpoint::PrometheusEndpoint(std::unique_ptr<Impl> impl,
                                       std::string host, int port)
    : impl_(std::move(impl)), host_(std::move(host)), port_(port) {}

PrometheusEndpoint::~PrometheusEndpoint() = default;

std::string PrometheusEndpoint::url() const {
  return absl::StrCat("http://", host_, ":", port_, "/metrics");
}

}  // namespace rlvla3
