// The /metrics endpoint: Prometheus' names for each kind of metric, and a
// real HTTP scrape over a socket that sees the registry as it is now.
#include "runtime/prometheus_endpoint.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "runtime/metrics.h"

namespace rlvla3 {
namespace {

using Labels = std::vector<std::pair<std::string, std::string>>;

// GET `path` from 127.0.0.1:port over a plain socket; the whole response.
std::string Scrape(int port, const std::string& path = "/metrics") {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  EXPECT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    ADD_FAILURE() << "cannot connect to 127.0.0.1:" << port;
    return "";
  }
  const std::string req =
      "GET " + path +
      " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
  EXPECT_EQ(write(fd, req.data(), req.size()),
            static_cast<ssize_t>(req.size()));
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = read(fd, buf, sizeof(buf))) > 0;) out.append(buf, n);
  close(fd);
  return out;
}

bool Has(const std::string& text, const std::string& line) {
  return text.find(line) != std::string::npos;
}

TEST(PrometheusText, NamesFollowPrometheusConventions) {
  MetricsRegistry m;
  m.counter("env_frames").Add(42);
  m.counter("env_time_parked_us").Add(2'500'000);
  m.gauge("policy_lag_mean").Set(1.5);
  Histogram& h = m.histogram("time_update_ms", {10.0, 100.0});
  h.Observe(5);
  h.Observe(50);
  h.Observe(500);
  m.stage("stage_env").AddBusy(std::chrono::seconds(3));
  const std::string text =
      PrometheusText(m.Read(), Labels{{"role", "learner"}});
  if (text.empty()) GTEST_SKIP() << "built without prometheus-cpp";
  EXPECT_TRUE(Has(text, "# TYPE rlvla3_env_frames_total counter")) << text;
  EXPECT_TRUE(Has(text, "rlvla3_env_frames_total{role=\"learner\"} 42"))
      << text;
  // Microsecond counters become seconds.
  EXPECT_TRUE(
      Has(text, "rlvla3_env_time_parked_seconds_total{role=\"learner\"} 2.5"))
      << text;
  EXPECT_TRUE(Has(text, "rlvla3_policy_lag_mean{role=\"learner\"} 1.5"))
      << text;
  // Millisecond histograms become seconds, buckets cumulative.
  EXPECT_TRUE(Has(text, "# TYPE rlvla3_time_update_seconds histogram")) << text;
  EXPECT_TRUE(Has(text,
                  "rlvla3_time_update_seconds_bucket{role=\"learner\","
                  "le=\"0.01\"} 1"))
      << text;
  EXPECT_TRUE(Has(text,
                  "rlvla3_time_update_seconds_bucket{role=\"learner\","
                  "le=\"0.1\"} 2"))
      << text;
  EXPECT_TRUE(Has(text,
                  "rlvla3_time_update_seconds_bucket{role=\"learner\","
                  "le=\"+Inf\"} 3"))
      << text;
  EXPECT_TRUE(
      Has(text, "rlvla3_time_update_seconds_sum{role=\"learner\"} 0.555"))
      << text;
  EXPECT_TRUE(Has(text,
                  "rlvla3_stage_busy_seconds_total{role=\"learner\","
                  "stage=\"stage_env\"} 3"))
      << text;
  EXPECT_TRUE(Has(text, "rlvla3_uptime_seconds{role=\"learner\"}")) << text;
}

TEST(PrometheusEndpoint, ScrapeSeesTheRegistryAsItIsNow) {
  MetricsRegistry m;
  Counter& trained = m.counter("trained_samples");
  trained.Add(7);
  absl::StatusOr<std::unique_ptr<PrometheusEndpoint>> ep =
      PrometheusEndpoint::Start({"127.0.0.1", 0, {{"role", "learner"}}}, &m);
  if (absl::IsUnimplemented(ep.status())) GTEST_SKIP() << ep.status();
  ASSERT_TRUE(ep.ok()) << ep.status();
  ASSERT_GT((*ep)->port(), 0);
  const std::string first = Scrape((*ep)->port());
  EXPECT_TRUE(Has(first, "200 OK")) << first;
  EXPECT_TRUE(Has(first, "rlvla3_trained_samples_total{role=\"learner\"} 7"))
      << first;
  trained.Add(5);
  const std::string second = Scrape((*ep)->port());
  EXPECT_TRUE(Has(second, "rlvla3_trained_samples_total{role=\"learner\"} 12"))
      << second;
  EXPECT_TRUE(Has(Scrape((*ep)->port(), "/other"), "404 Not Found"));
  // A scrape leaves the progress line's rates alone: the first Snapshot's
  // rate still counts all 12 samples (0 if a scrape had moved its baseline).
  EXPECT_GT(m.Snapshot().Get("trained_samples_per_s"), 0);
}

TEST(PrometheusEndpoint, AConfigsPortZeroMeansOff) {
  MetricsRegistry m;
  absl::StatusOr<std::unique_ptr<PrometheusEndpoint>> off =
      PrometheusEndpoint::StartIfAsked({"127.0.0.1", 0, {}}, &m, "test");
  ASSERT_TRUE(off.ok()) << off.status();
  EXPECT_EQ(*off, nullptr);
}

TEST(PrometheusEndpoint, AnAddressInUseIsAnErrorNamingIt) {
  MetricsRegistry m;
  absl::StatusOr<std::unique_ptr<PrometheusEndpoint>> first =
      PrometheusEndpoint::Start({"127.0.0.1", 0, {}}, &m);
  if (absl::IsUnimplemented(first.status())) GTEST_SKIP() << first.status();
  ASSERT_TRUE(first.ok()) << first.status();
  absl::StatusOr<std::unique_ptr<PrometheusEndpoint>> second =
      PrometheusEndpoint::Start({"127.0.0.1", (*first)->port(), {}}, &m);
  ASSERT_FALSE(second.ok());
  EXPECT_TRUE(Has(std::string(second.status().message()),
                  "127.0.0.1:" + std::to_string((*first)->port())))
      << second.status();
}

// A client connected to 127.0.0.1:port that sent `bytes` and then stalls
// (slowloris); the socket, for the test to close.
int Stalled(int port, const std::string& bytes) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  EXPECT_EQ(write(fd, bytes.data(), bytes.size()),
            static_cast<ssize_t>(bytes.size()));
  return fd;
}

// Ten clients that send half a request and stall, and ten that never read
// their response: scrapes are still answered at once (one stalled client
// held the one thread for its 2 s read timeout, ten for 20 s), and the
// endpoint stops at once with them connected.
TEST(PrometheusEndpoint, SlowClientsDoNotHoldScrapes) {
  MetricsRegistry m;
  m.counter("trained_samples").Add(3);
  absl::StatusOr<std::unique_ptr<PrometheusEndpoint>> ep =
      PrometheusEndpoint::Start({"127.0.0.1", 0, {}}, &m);
  if (absl::IsUnimplemented(ep.status())) GTEST_SKIP() << ep.status();
  ASSERT_TRUE(ep.ok()) << ep.status();
  std::vector<int> slow;
  for (int i = 0; i < 10; ++i)
    slow.push_back(Stalled((*ep)->port(), "GET /met"));
  for (int i = 0; i < 10; ++i) {
    slow.push_back(
        Stalled((*ep)->port(), "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"));
  }
  for (int i = 0; i < 3; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::string got = Scrape((*ep)->port());
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count();
    EXPECT_TRUE(Has(got, "rlvla3_trained_samples_total 3")) << got;
    EXPECT_LT(s, 1.0) << "scrape " << i << " waited behind slow clients";
  }
  const auto t0 = std::chrono::steady_clock::now();
  ep->reset();
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
                .count(),
            1.0);
  for (int fd : slow) close(fd);
}

}  // namespace
}  // namespace rlvla3
