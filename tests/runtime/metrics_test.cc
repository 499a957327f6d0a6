#include "runtime/metrics.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "runtime/metrics_writer.h"
#include "tests/test_dir.h"

namespace rlvla3 {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(Histogram, CountsQuantilesAndExtremes) {
  Histogram h =
      Histogram::Linear(1, 1, 10);  // buckets <=1, <=2, ..., <=10, +inf
  for (int v = 1; v <= 10; ++v) h.Observe(v);
  h.Observe(100);
  HistogramSnapshot s = h.Snapshot();
  EXPECT_EQ(s.count, 11u);
  EXPECT_DOUBLE_EQ(s.sum, 155.0);
  EXPECT_DOUBLE_EQ(s.min, 1.0);
  EXPECT_DOUBLE_EQ(s.max, 100.0);
  EXPECT_DOUBLE_EQ(s.Quantile(0.5), 6.0);
  EXPECT_DOUBLE_EQ(s.Quantile(1.0), 100.0);
  EXPECT_EQ(s.counts.back(), 1u);
}

TEST(Histogram, ConcurrentObserveLosesNothing) {
  Histogram h = Histogram::Exponential(1, 2, 8);
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t) {
    ts.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) h.Observe(i % 300);
    });
  }
  for (auto& t : ts) t.join();
  HistogramSnapshot s = h.Snapshot();
  EXPECT_EQ(s.count, 40000u);
  uint64_t total = 0;
  for (auto c : s.counts) total += c;
  EXPECT_EQ(total, 40000u);
}

TEST(MetricsRegistry, RatesAreDeltasOverTheInterval) {
  MetricsRegistry m;
  Counter& c = m.counter("frames");
  EXPECT_EQ(&c, &m.counter("frames"));
  m.Snapshot();
  c.Add(500);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  MetricsSnapshot s = m.Snapshot();
  EXPECT_EQ(s.Get("frames"), 500.0);
  const double rate = s.Get("frames_per_s");
  EXPECT_GT(rate, 0.0);
  EXPECT_LE(rate, 500.0 / 0.05 + 1e-9);
  MetricsSnapshot s2 = m.Snapshot();  // no new frames: rate drops to 0
  EXPECT_EQ(s2.Get("frames_per_s"), 0.0);
}

TEST(StageTimer, BusyPercent) {
  StageTimer t;
  EXPECT_EQ(t.busy_percent(), 0.0);
  t.AddBusy(std::chrono::milliseconds(30));
  t.AddIdle(std::chrono::milliseconds(10));
  EXPECT_DOUBLE_EQ(t.busy_percent(), 75.0);
  { StageTimer::Scope s(t); }
  EXPECT_GE(t.busy_ns(), 30'000'000);
}

TEST(MetricsWriters, JsonlAndCsv) {
  MetricsRegistry m;
  m.counter("a").Add(3);
  m.gauge("depth").Set(2.5);
  m.histogram("lat", std::vector<double>{1, 2, 4}).Observe(3);
  const testutil::TestDir tmp;
  const std::string& dir = tmp.path();
  auto jsonl = JsonlWriter::Open(dir + "/m.jsonl");
  auto csv = CsvWriter::Open(dir + "/m.csv");
  ASSERT_TRUE(jsonl.ok() && csv.ok());
  MetricsSnapshot s = m.Snapshot();
  EXPECT_TRUE((*jsonl)->Write(s).ok());
  EXPECT_TRUE((*csv)->Write(s).ok());
  EXPECT_TRUE((*csv)->Write(s).ok());
  const std::string j = ReadFile(dir + "/m.jsonl");
  EXPECT_EQ(j.rfind("{\"elapsed_s\":", 0), 0u);
  EXPECT_NE(j.find("\"a\":3"), std::string::npos);
  EXPECT_NE(j.find("\"depth\":2.5"), std::string::npos);
  EXPECT_NE(j.find("\"lat.p50\":3"), std::string::npos);
  EXPECT_EQ(j.back(), '\n');
  const std::string c = ReadFile(dir + "/m.csv");
  EXPECT_EQ(c.rfind("elapsed_s,a,a_per_s,depth,lat.count", 0), 0u);
  EXPECT_EQ(std::count(c.begin(), c.end(), '\n'), 3);
  EXPECT_FALSE(JsonlWriter::Open("/nonexistent/dir/x.jsonl").ok());
}

// A write that fails (here: a full device) is reported with the file and the
// reason, never dropped silently.
TEST(MetricsWriters, AFailedWriteNamesTheFileAndTheReason) {
  MetricsRegistry m;
  m.counter("a").Add(1);
  auto jsonl = JsonlWriter::Open("/dev/full");
  auto csv = CsvWriter::Open("/dev/full");
  ASSERT_TRUE(jsonl.ok() && csv.ok());
  const absl::Status j = (*jsonl)->Write(m.Snapshot());
  EXPECT_EQ(j.message(), "/dev/full: write failed: No space left on device");
  EXPECT_FALSE((*csv)->Write(m.Snapshot()).ok());
}

TEST(ProgressLine, PlainModeThrottlesAndTtyRewritesInPlace) {
  const testutil::TestDir dir;
  const std::string path = dir.File("progress.txt");
  std::FILE* f = std::fopen(path.c_str(), "w");
  {
    ProgressLine p(f, ProgressLine::Mode::kAuto, absl::Hours(1));
    EXPECT_EQ(p.mode(),
              ProgressLine::Mode::kPlain);  // a file is not a terminal
    p.Update("first");
    p.Update("second");  // within the period: suppressed
    p.Finish();
    ProgressLine t(f, ProgressLine::Mode::kTty, absl::Hours(1));
    t.Update("x");
    t.Update("y");
    t.Finish();
  }
  std::fclose(f);
  EXPECT_EQ(ReadFile(path), "first\n\rx\033[K\ry\033[K\n");
}

}  // namespace
}  // namespace rlvla3
