// Level 1 served over gRPC on loopback vs in process, same policy and batcher
// settings (the run config's), and a load test of many concurrent Act
// streams against one inference server. Prints figures; asserts nothing.
//
// Clients are closed loops: each env re-submits its (fixed, random)
// observation as soon as its action reply arrives, so the figure is what the
// serving path sustains, env stepping excluded.
//
//   serving_benchmark [--config F] [--set k=v ...] [--envs N] [--seconds S]
//                     [--load-streams M] [--load-seconds L]
#include <sys/resource.h>
#include <torch/torch.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "runtime/channels/observation_channel.h"
#include "runtime/channels/weight_channel.h"
#include "runtime/config.h"
#include "runtime/thread_budget.h"
#include "services/inference/inference_server.h"
#include "services/net/grpc_common.h"
#include "services/net/observation_client.h"
#include "services/net/observation_server.h"
#include "services/options/engine_config.h"

namespace rlvla3 {
namespace {

using Clock = std::chrono::steady_clock;

struct Flags {
  std::string config;
  std::vector<std::string> sets;
  int envs = 64;
  double seconds = 20;
  int load_streams = 512;
  double load_seconds = 60;
};

// Fixed random observations, one per env.
struct Observations {
  Observations(int n, const WireShape& s) {
    std::mt19937 rng(7);
    const size_t image = size_t(s.height) * s.width * 3;
    for (int i = 0; i < n; ++i) {
      agentview.emplace_back(image);
      wrist.emplace_back(image);
      proprio.emplace_back(s.proprio_dim);
      for (auto& b : agentview.back()) b = static_cast<uint8_t>(rng());
      for (auto& b : wrist.back()) b = static_cast<uint8_t>(rng());
      for (auto& p : proprio.back()) p = (rng() % 2000) / 1000.0f - 1.0f;
    }
  }
  ObservationRequest Request(int env) const {
    return {env,
            0,
            {agentview[env].data(), wrist[env].data()},
            proprio[env].data(),
            0};
  }
  std::vector<std::vector<uint8_t>> agentview, wrist;
  std::vector<std::vector<float>> proprio;
};

int64_t RssKiB() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6));
  }
  return -1;
}

int64_t PeakRssKiB() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

// Replies per second over `seconds`, after a warm-up of 3 s.
double Measure(const std::atomic<uint64_t>& replies, double seconds) {
  std::this_thread::sleep_for(std::chrono::seconds(3));
  const uint64_t r0 = replies.load();
  const auto t0 = Clock::now();
  std::this_thread::sleep_for(
      std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000)));
  const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
  return (replies.load() - r0) / dt;
}

struct Setup {
  EngineParts parts;
  LocalEngineOptions options;
  WireShape shape;
  LocalWeightChannel<Policy> weights;
};

ObservationServerOptions ServiceOptions(const Setup& s, int envs) {
  ObservationServerOptions so;
  so.shape = s.shape;
  so.num_envs = envs;
  so.num_tasks = static_cast<int>(s.options.inference.text.size(0));
  so.request_queue = s.options.request_queue;
  so.request_queue.capacity =
      std::max<size_t>(so.request_queue.capacity, size_t(envs));
  return so;
}

double InProcess(Setup& s, int envs, double seconds) {
  Observations obs(envs, s.shape);
  QueueOptions q = s.options.request_queue;
  q.capacity = std::max<size_t>(q.capacity, size_t(envs));
  LocalObservationChannel ch(q);
  MetricsRegistry metrics;
  StageTimeline timeline(false);
  std::atomic<uint64_t> replies{0};
  ch.SetReplyHandler([&](absl::Span<const ActionReply> rs) {
    for (const ActionReply& r : rs) {
      replies.fetch_add(1, std::memory_order_relaxed);
      if (absl::Status st = ch.Submit(obs.Request(r.env)); !st.ok()) return st;
    }
    return absl::OkStatus();
  });
  InferenceServer role(s.options.inference, &ch, &s.weights, &metrics,
                       &timeline);
  role.Start([&ch] { ch.Close(); });
  for (int e = 0; e < envs; ++e) {
    if (absl::Status st = ch.Submit(obs.Request(e)); !st.ok()) {
      std::fprintf(stderr, "in-process submit: %s\n", st.ToString().c_str());
    }
  }
  const double rate = Measure(replies, seconds);
  role.Stop();
  ch.Close();
  if (absl::Status st = role.Wait(); !st.ok()) {
    std::fprintf(stderr, "in-process: %s\n", st.ToString().c_str());
  }
  return rate;
}

struct GrpcResult {
  double rate = 0;
  uint64_t errors = 0, retries = 0;
  int64_t rss_mid_kib = 0, rss_end_kib = 0;
};

// `streams` clients of `envs / streams` envs each, against one server.
GrpcResult OverGrpc(Setup& s, int envs, int streams, double seconds) {
  Observations obs(envs, s.shape);
  NetOptions net;
  MetricsRegistry metrics;
  StageTimeline timeline(false);
  ObservationServer service(ServiceOptions(s, envs), net, &metrics);
  InferenceServer role(s.options.inference, &service, &s.weights, &metrics,
                       &timeline);
  role.Start([&service] { service.Close(); });
  GrpcResult out;
  absl::StatusOr<std::unique_ptr<RoleServer>> server =
      RoleServer::Start("127.0.0.1:0", net, {service.service()});
  if (!server.ok()) {
    std::fprintf(stderr, "server: %s\n", server.status().ToString().c_str());
    out.errors = 1;
    return out;
  }
  const std::string target = "127.0.0.1:" + std::to_string((*server)->port());
  std::atomic<uint64_t> replies{0};
  std::vector<std::unique_ptr<GrpcObservationChannel>> clients;
  const int per = envs / streams;
  for (int c = 0; c < streams; ++c) {
    auto ch = GrpcObservationChannel::Create(
        {{target}, c * per, per, s.shape, absl::Seconds(10)}, net);
    if (!ch.ok()) {
      std::fprintf(stderr, "client: %s\n", ch.status().ToString().c_str());
      ++out.errors;
      continue;
    }
    GrpcObservationChannel* p = ch->get();
    const int offset = c * per;
    p->SetReplyHandler([&, p, offset](absl::Span<const ActionReply> rs) {
      for (const ActionReply& r : rs) {
        replies.fetch_add(1, std::memory_order_relaxed);
        ObservationRequest q = obs.Request(offset + r.env);
        q.env = r.env;
        if (absl::Status st = p->Submit(q); !st.ok()) return st;
      }
      return absl::OkStatus();
    });
    clients.push_back(*std::move(ch));
  }
  for (size_t c = 0; c < clients.size(); ++c) {
    for (int e = 0; e < per; ++e) {
      ObservationRequest q = obs.Request(static_cast<int>(c) * per + e);
      q.env = e;
      if (absl::Status st = clients[c]->Submit(q); !st.ok()) {
        std::fprintf(stderr, "submit: %s\n", st.ToString().c_str());
        ++out.errors;
      }
    }
  }
  std::thread rss([&] {  // RSS half-way, to tell growth from a high plateau
    std::this_thread::sleep_for(std::chrono::milliseconds(
        static_cast<int64_t>((3 + seconds / 2) * 1000)));
    out.rss_mid_kib = RssKiB();
  });
  out.rate = Measure(replies, seconds);
  rss.join();
  out.rss_end_kib = RssKiB();
  for (auto& c : clients) {
    if (!c->status().ok()) {
      std::fprintf(stderr, "client: %s\n", c->status().ToString().c_str());
      ++out.errors;
    }
    out.retries += c->stats().retries;
  }
  out.errors += metrics.counter("invalid_requests").value();
  for (auto& c : clients) c->Close();
  (*server)->Shutdown(absl::Seconds(1));
  role.Stop();
  service.Close();
  if (absl::Status st = role.Wait(); !st.ok()) {
    std::fprintf(stderr, "over gRPC: %s\n", st.ToString().c_str());
  }
  return out;
}

int Main(const Flags& f) {
  absl::StatusOr<Config> c = LoadConfig(f.config, f.sets);
  if (!c.ok()) {
    std::fprintf(stderr, "config: %s\n", c.status().ToString().c_str());
    return 2;
  }
  if (absl::Status st = ApplyThreadBudget(c->threads); !st.ok()) {
    std::fprintf(stderr, "%s\n", st.ToString().c_str());
    return 2;
  }
  torch::manual_seed(static_cast<uint64_t>(c->run.seed));
  Setup s;
  absl::StatusOr<EngineParts> parts = BuildEngineParts(*c);
  if (!parts.ok()) {
    std::fprintf(stderr, "%s\n", parts.status().ToString().c_str());
    return 1;
  }
  s.parts = *std::move(parts);
  absl::StatusOr<LocalEngineOptions> o =
      LocalEngineOptionsFromConfig(*c, s.parts);
  if (!o.ok()) {
    std::fprintf(stderr, "%s\n", o.status().ToString().c_str());
    return 1;
  }
  s.options = *std::move(o);
  const SegmentShape& sh = s.options.segment_shape;
  s.shape = {sh.height,      sh.width, sh.cameras,
             sh.proprio_dim, sh.chunk, sh.action_dim};
  s.weights.Publish(s.parts.policy->Snapshot(0), 0);
  const BatcherOptions& b = s.options.inference.batcher;
  std::printf(
      "serving_benchmark: %s, %d envs, %dx%d images, max_batch %zu, "
      "%d actor(s), %.0f s per placement\n",
      f.config.empty() ? "defaults" : f.config.c_str(), f.envs, sh.width,
      sh.height, b.max_batch, s.options.inference.actors, f.seconds);
  const double local = InProcess(s, f.envs, f.seconds);
  const GrpcResult grpc = OverGrpc(s, f.envs, 1, f.seconds);
  std::printf("%-34s %12s\n", "placement", "obs/s");
  std::printf("%-34s %12.1f\n", "in process (LocalObservationChannel)", local);
  std::printf("%-34s %12.1f   (%.2f of in process, %llu errors)\n",
              "gRPC loopback (1 Act stream)", grpc.rate, grpc.rate / local,
              static_cast<unsigned long long>(grpc.errors));
  if (f.load_streams > 0) {
    const GrpcResult load =
        OverGrpc(s, f.load_streams, f.load_streams, f.load_seconds);
    std::printf(
        "load: %d concurrent Act streams (1 env each), %.0f s: %.1f obs/s, "
        "%llu errors, %llu busy retries, RSS %.0f MiB half-way, %.0f MiB at "
        "the end, peak RSS %.0f MiB (server and clients in this process)\n",
        f.load_streams, f.load_seconds, load.rate,
        static_cast<unsigned long long>(load.errors),
        static_cast<unsigned long long>(load.retries),
        load.rss_mid_kib / 1024.0, load.rss_end_kib / 1024.0,
        PeakRssKiB() / 1024.0);
  }
  return 0;
}

}  // namespace
}  // namespace rlvla3

int main(int argc, char** argv) {
  rlvla3::Flags f;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--config") {
      f.config = next();
    } else if (a == "--set") {
      f.sets.push_back(next());
    } else if (a == "--envs") {
      f.envs = std::stoi(next());
    } else if (a == "--seconds") {
      f.seconds = std::stod(next());
    } else if (a == "--load-streams") {
      f.load_streams = std::stoi(next());
    } else if (a == "--load-seconds") {
      f.load_seconds = std::stod(next());
    } else {
      std::fprintf(stderr,
                   "usage: serving_benchmark [--config F] [--set k=v ...] "
                   "[--envs N] [--seconds S] [--load-streams M] "
                   "[--load-seconds L]\n");
      return 2;
    }
  }
  return rlvla3::Main(f);
}
