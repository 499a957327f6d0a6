#include "services/runs/wire_costs_bench.h"

#include <spdlog/spdlog.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "rlvla3/v1/rollout.pb.h"
#include "runtime/metrics.h"
#include "runtime/steady_clock.h"
#include "services/net/grpc_common.h"
#include "services/net/observation_client.h"
#include "services/net/observation_server.h"
#include "services/net/weight_codec.h"
#include "services/net/wire_format.h"

namespace rlvla3 {
namespace {

constexpr size_t kWeightChunkBytes = 4 << 20;

double CpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

// CPU seconds per call of `call` (an absl::Status) over at least `seconds`
// and 3 calls; the first error ends it.
template <typename F>
absl::StatusOr<double> CpuSecondsPerCall(F&& call, double seconds) {
  const double cpu0 = CpuSeconds();
  int64_t n = 0;
  for (const auto t0 = SteadyNowNs();
       n < 3 || 1e-9 * double(SteadyNowNs() - t0) < seconds; ++n) {
    if (absl::Status s = call(); !s.ok()) return s;
  }
  return (CpuSeconds() - cpu0) / double(n);
}

// Replies to every observation at once (the inference actor's place).
class Answerer {
 public:
  Answerer(ObservationServer* server, const SegmentShape& s, int max_batch)
      : server_(server),
        actions_(size_t(s.chunk) * s.action_dim, 0.f),
        tokens_(size_t(s.chunk) * s.action_dim * s.taken_bytes, 0),
        log_probs_(size_t(s.chunk), 0.f),
        batch_(size_t(max_batch)),
        replies_(size_t(max_batch)),
        thread_([this] { Loop(); }) {}
  ~Answerer() {
    if (thread_.joinable()) thread_.join();
  }
  // After the server's request queue closed.
  absl::Status Join() {
    if (thread_.joinable()) thread_.join();
    return status_;
  }

 private:
  void Loop() {
    for (;;) {
      size_t n = 0;
      const QueueStatus q = server_->requests().PopBulk(
          batch_.data(), batch_.size(), absl::Milliseconds(50), &n);
      if (q == QueueStatus::kClosed) return;
      if (n == 0) continue;
      for (size_t i = 0; i < n; ++i) {
        ActionReply& r = replies_[i];
        r.env = batch_[i].env;
        r.actions = actions_.data();
        r.tokens = tokens_.data();
        r.log_probs = log_probs_.data();
      }
      if (absl::Status s =
              server_->Reply(absl::MakeConstSpan(replies_.data(), n));
          !s.ok() && status_.ok()) {
        status_ = s;
      }
    }
  }

  ObservationServer* server_;
  std::vector<float> actions_;
  std::vector<uint8_t> tokens_;
  std::vector<float> log_probs_;
  std::vector<ObservationRequest> batch_;
  std::vector<ActionReply> replies_;
  absl::Status status_;  // the answering thread's, read after join
  std::thread thread_;
};

// The envs' observations: zero images and proprio of the run's shape.
struct EnvData {
  EnvData(const SegmentShape& sh, int envs)
      : pixels(size_t(sh.height) * sh.width * 3 * sh.num_cameras(), 0),
        proprio(size_t(sh.proprio_dim), 0.f),
        requests(static_cast<size_t>(envs)) {
    const size_t image = size_t(sh.height) * sh.width * 3;
    for (int e = 0; e < envs; ++e) {
      ObservationRequest& r = requests[size_t(e)];
      r.env = e;
      for (int c = 0; c < sh.num_cameras(); ++c)
        r.images[size_t(c)] = pixels.data() + image * size_t(c);
      r.proprio = proprio.data();
    }
  }
  std::vector<uint8_t> pixels;
  std::vector<float> proprio;
  std::vector<ObservationRequest> requests;
};

struct RoundTrips {
  double cpu_s = 0, wall_s = 0;  // per round trip
};

// `envs` observations in flight around the stream for `seconds`.
absl::StatusOr<RoundTrips> ObservationRoundTrips(const WireBenchInputs& in,
                                                 int envs, double seconds) {
  const SegmentShape& sh = in.shape;
  const NetOptions net;
  MetricsRegistry metrics;
  ObservationServerOptions so;
  so.shape = WireShapeOf(sh);
  so.num_envs = envs;
  so.num_tasks = 1;
  so.request_queue.capacity = size_t(std::max(envs, 8));
  auto server = std::make_unique<ObservationServer>(so, net, &metrics);
  absl::StatusOr<std::unique_ptr<RoleServer>> role =
      RoleServer::Start("127.0.0.1:0", net, {server->service()});
  if (!role.ok()) return role.status();
  ObservationClientOptions co;
  co.targets = {absl::StrCat("127.0.0.1:", (*role)->port())};
  co.num_envs = envs;
  co.shape = so.shape;
  co.give_up_after = absl::Seconds(10);
  absl::StatusOr<std::unique_ptr<GrpcObservationChannel>> ch =
      GrpcObservationChannel::Create(co, net);
  if (!ch.ok()) return ch.status();
  const EnvData data(sh, envs);
  const std::vector<ObservationRequest>& requests = data.requests;
  // Replies come back on gRPC's threads; the env's worker (this thread)
  // submits the next observation, as a rollout worker's does.
  QueueOptions qo;
  qo.capacity = size_t(envs);
  BoundedQueue<int> answered(qo);
  std::atomic<int64_t> trips{0};
  (*ch)->SetReplyHandler([&](absl::Span<const ActionReply> replies) {
    for (const ActionReply& r : replies) {
      ++trips;
      if (answered.Push(int(r.env), absl::ZeroDuration()) != QueueStatus::kOk)
        return absl::InternalError("wire bench: reply queue full");
    }
    return absl::OkStatus();
  });
  Answerer answerer(server.get(), sh, in.max_batch);
  absl::Status status;
  for (int e = 0; e < envs && status.ok(); ++e)
    status = (*ch)->Submit(requests[size_t(e)]);
  double t0 = 0, cpu0 = 0;
  int64_t n0 = 0;
  const auto start = SteadyNowNs();
  bool timing = false;
  while (status.ok()) {
    const double since = 1e-9 * double(SteadyNowNs() - start);
    if (!timing && since >= 0.3) {  // warm
      timing = true;
      t0 = since, cpu0 = CpuSeconds(), n0 = trips.load();
    }
    if (timing && since - t0 >= seconds) break;
    int env = 0;
    if (answered.Pop(env, absl::Milliseconds(200)) != QueueStatus::kOk) {
      status = absl::DeadlineExceededError(
          "wire bench: no reply within 200 ms over loopback");
      break;
    }
    status = (*ch)->Submit(requests[size_t(env)]);
  }
  const double wall = 1e-9 * double(SteadyNowNs() - start) - t0;
  const double cpu = CpuSeconds() - cpu0;
  const int64_t n = trips.load() - n0;
  (*ch)->Close();
  (*role)->Shutdown(absl::Seconds(1));
  server->Close();
  if (status.ok()) status = (*ch)->status();
  if (absl::Status s = answerer.Join(); status.ok()) status = s;
  if (!status.ok()) return status;
  if (n <= 0) return absl::InternalError("wire bench: no round trips");
  return RoundTrips{cpu / double(n), wall * envs / double(n)};
}

// A full segment of the run's shape through the codec and its checks.
absl::StatusOr<double> SegmentSeconds(const WireBenchInputs& in,
                                      double seconds) {
  RolloutSegment seg(in.shape), into(in.shape);
  seg.n = in.shape.capacity;
  seg.has_bootstrap = true;
  std::fill(seg.executed.begin(), seg.executed.end(),
            uint8_t(std::max(1, in.execute_steps)));
  SegmentLimits limits;
  limits.num_envs = 1;
  limits.num_tasks = 1;
  limits.execute_steps = std::max(1, in.execute_steps);
  v1::TrajectorySegment m, back;
  std::string bytes;
  absl::StatusOr<double> per_segment = CpuSecondsPerCall(
      [&] {
        EncodeSegment(seg, 0, &m);
        if (!m.SerializeToString(&bytes) || !back.ParseFromString(bytes))
          return absl::InternalError("wire bench: a segment did not serialize");
        return DecodeSegment(back, limits, &into);
      },
      seconds);
  if (!per_segment.ok()) return per_segment.status();
  return *per_segment / double(seg.n);
}

// One version of the policy's weights through the codec and the assembler.
absl::StatusOr<double> WeightSeconds(const WireBenchInputs& in,
                                     double seconds) {
  const TrainablePolicy::NamedTensors state = in.policy->State();
  std::string bytes;
  v1::WeightUpdate back;
  uint64_t version = 0;
  return CpuSecondsPerCall(
      [&]() -> absl::Status {
        absl::StatusOr<std::vector<v1::WeightUpdate>> chunks = EncodeWeights(
            state, in.policy->kind(), ++version, kWeightChunkBytes);
        if (!chunks.ok()) return chunks.status();
        WeightAssembler a(in.policy->kind());
        for (const v1::WeightUpdate& c : *chunks) {
          if (!c.SerializeToString(&bytes) || !back.ParseFromString(bytes))
            return absl::InternalError("wire bench: weights did not serialize");
          if (absl::Status s = a.Add(back); !s.ok()) return s;
        }
        return a.Take().status();
      },
      seconds);
}

}  // namespace

absl::Status MeasureWireCosts(const WireBenchInputs& in, WireCosts* out) {
  absl::StatusOr<RoundTrips> all =
      ObservationRoundTrips(in, std::max(1, in.envs), in.seconds);
  if (!all.ok()) return all.status();
  absl::StatusOr<RoundTrips> one = ObservationRoundTrips(in, 1, in.seconds);
  if (!one.ok()) return one.status();
  absl::StatusOr<double> sample = SegmentSeconds(in, in.seconds / 2);
  if (!sample.ok()) return sample.status();
  absl::StatusOr<double> weights = WeightSeconds(in, in.seconds / 2);
  if (!weights.ok()) return weights.status();
  out->observation_cpu_s = all->cpu_s;
  out->observation_wait_s = std::max(0.0, one->wall_s - one->cpu_s);
  out->sample_cpu_s = *sample;
  out->weights_cpu_s = *weights;
  spdlog::info(
      "stage costs: wire: {:.0f} us CPU per observation round trip ({} in "
      "flight), a lone one {:.0f} us wall; {:.1f} us per segment sample; "
      "{:.2f} ms per weight version",
      1e6 * all->cpu_s, in.envs, 1e6 * one->wall_s, 1e6 * *sample,
      1e3 * *weights);
  return absl::OkStatus();
}

}  // namespace rlvla3
