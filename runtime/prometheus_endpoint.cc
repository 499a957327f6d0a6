#include "runtime/prometheus_endpoint.h"

#include <spdlog/spdlog.h>

#include <exception>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

#ifdef RLVLA3_HAVE_PROMETHEUS
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <prometheus/metric_family.h>
#include <prometheus/text_serializer.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <thread>
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

// One HTTP/1.1 exchange per connection, on one thread: GET /metrics gets
// the registry's exposition, anything else 404. (prometheus-cpp's own
// exposer, civetweb, starts threads with 100 KiB stacks, which fail in a
// process that loads Debian's LibTorch: its libraries' static TLS is larger.)
struct PrometheusEndpoint::Impl {
  MetricsRegistry* metrics = nullptr;
  Labels labels;
  int listen_fd = -1;
  int wake[2] = {-1, -1};  // a byte on wake[1] stops the thread
  std::thread thread;

  ~Impl() {
    if (thread.joinable()) {
      const char stop = 1;
      if (write(wake[1], &stop, 1) != 1) std::perror("metrics endpoint: stop");
      thread.join();
    }
    for (int fd : {listen_fd, wake[0], wake[1]}) {
      if (fd >= 0) close(fd);
    }
  }

  void Serve() {
    for (;;) {
      pollfd fds[2] = {{listen_fd, POLLIN, 0}, {wake[0], POLLIN, 0}};
      if (poll(fds, 2, -1) < 0) {
        if (errno == EINTR) continue;
        return;
      }
      if (fds[1].revents != 0) return;
      const int fd = accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      Answer(fd);
      close(fd);
    }
  }

  // Reads the request head (2 s at most), writes the response.
  void Answer(int fd) const {
    timeval timeout{2, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
    std::string head;
    char buf[1024];
    while (head.find("\r\n\r\n") == std::string::npos && head.size() < 8192) {
      const ssize_t n = read(fd, buf, sizeof(buf));
      if (n <= 0) return;
      head.append(buf, static_cast<size_t>(n));
    }
    const bool scrape = absl::StartsWith(head, "GET /metrics ") ||
                        absl::StartsWith(head, "GET /metrics?");
    const std::string body =
        scrape ? PrometheusText(metrics->Read(), labels) : "not found\n";
    const std::string response = absl::StrCat(
        "HTTP/1.1 ", scrape ? "200 OK" : "404 Not Found", "\r\nContent-Type: ",
        scrape ? "text/plain; version=0.0.4; charset=utf-8" : "text/plain",
        "\r\nContent-Length: ", body.size(), "\r\nConnection: close\r\n\r\n",
        body);
    for (size_t sent = 0; sent < response.size();) {
      const ssize_t n = send(fd, response.data() + sent, response.size() - sent,
                             MSG_NOSIGNAL);
      if (n <= 0) return;  // the scraper left; it will ask again
      sent += static_cast<size_t>(n);
    }
  }
};

// A listening TCP socket on host:port (port 0: any free one).
absl::StatusOr<int> Listen(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = absl::StrCat(port);
  if (const int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &found);
      rc != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "metrics endpoint ", host, ":", port, ": ", gai_strerror(rc)));
  }
  int fd = socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int one = 1;
  const bool ok =
      fd >= 0 &&
      setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == 0 &&
      bind(fd, found->ai_addr, found->ai_addrlen) == 0 && listen(fd, 16) == 0;
  const int err = errno;
  freeaddrinfo(found);
  if (!ok) {
    if (fd >= 0) close(fd);
    return absl::UnavailableError(absl::StrCat(
        "metrics endpoint ", host, ":", port, ": cannot listen (",
        std::strerror(err), "); set metrics.prometheus_port to a free port"));
  }
  return fd;
}

absl::StatusOr<std::unique_ptr<PrometheusEndpoint>> PrometheusEndpoint::Start(
    const PrometheusOptions& options, MetricsRegistry* metrics) {
  absl::StatusOr<int> fd = Listen(options.host, options.port);
  if (!fd.ok()) return fd.status();
  auto impl = std::make_unique<Impl>();
  impl->metrics = metrics;
  impl->labels = options.labels;
  impl->listen_fd = *fd;
  if (pipe2(impl->wake, O_CLOEXEC) != 0) {
    return absl::InternalError(
        absl::StrCat("metrics endpoint: pipe: ", std::strerror(errno)));
  }
  sockaddr_storage bound{};
  socklen_t len = sizeof(bound);
  getsockname(impl->listen_fd, reinterpret_cast<sockaddr*>(&bound), &len);
  const int port =
      ntohs(bound.ss_family == AF_INET6
                ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] { raw->Serve(); });
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
