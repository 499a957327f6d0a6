// `rl-vla3 serve inference`: the inference server as its gRPC service, on
// the learner's weights.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "rlvla3/v1/services.grpc.pb.h"
#include "runtime/channels/weight_channel.h"
#include "runtime/config_schema.h"
#include "runtime/rate_meter.h"
#include "runtime/stop_signal.h"
#include "services/inference/inference_server.h"
#include "services/net/observation_server.h"
#include "services/net/weight_client.h"
#include "services/options/engine_config.h"
#include "services/runs/serve_role.h"

namespace rlvla3 {
namespace {

constexpr int kExitOk = 0;
using Clock = std::chrono::steady_clock;

// The service's shape and queue: every env of the run may be waiting on it.
ObservationServerOptions ServiceOptionsOf(const RoleSetup& s) {
  ObservationServerOptions so;
  so.shape = s.shape;
  so.num_envs = s.global_envs;
  so.num_tasks = static_cast<int>(s.options.inference.text.size(0));
  so.request_queue = s.options.request_queue;
  so.request_queue.capacity =
      std::max<size_t>(so.request_queue.capacity, size_t(s.global_envs));
  so.max_queued_replies = s.limits.max_queued_replies;
  return so;
}

// Weights come from the learner only, each version loaded into a copy of
// this process's policy and published to the actors.
absl::StatusOr<std::unique_ptr<WeightSubscriber>> SubscribeToWeights(
    const std::string& learner, const NetOptions& net,
    std::shared_ptr<TrainablePolicy> base, LocalWeightChannel<Policy>* weights,
    ObservationServer* service) {
  WeightSubscriber::Callbacks cb;
  cb.on_weights = [weights, service, base](AssembledWeights w) -> absl::Status {
    std::shared_ptr<TrainablePolicy> p = base->Snapshot(w.version);
    if (absl::Status st = p->LoadState(w.state); !st.ok()) return st;
    weights->Publish(p, w.version);
    // Sync: envs resume on the version this server serves from now on.
    service->AnnounceVersion(w.version);
    return absl::OkStatus();
  };
  return WeightSubscriber::Start({learner, false, base->kind(), 0}, net,
                                 std::move(cb));
}

// The server serves from the learner's first version on: waits up to 60 s.
absl::Status WaitForFirstWeights(const LocalWeightChannel<Policy>& weights,
                                 const WeightSubscriber& sub) {
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  while (weights.Latest().value == nullptr) {
    if (!sub.status().ok()) return sub.status();
    if (Clock::now() > deadline || StopSignalled()) {
      return absl::DeadlineExceededError("no weights from the learner in 60 s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return absl::OkStatus();
}

}  // namespace

int ServeInference(const ServeFlags& f, RoleSetup& s) {
  if (f.learner.empty()) {
    return FailRole("inference", absl::InvalidArgumentError("needs --learner"));
  }
  MetricsRegistry metrics;
  StageTimeline timeline(false);
  LocalWeightChannel<Policy> weights;
  ObservationServer service(ServiceOptionsOf(s), s.net, &metrics);
  Counter& served = metrics.counter("observations_served");
  RateMeter rate;
  // Weights come from the learner only: the server starts serving with the
  // learner's first version, loaded into a copy of this process's policy.
  std::shared_ptr<TrainablePolicy> base = s.parts.policy;
  base->To(s.options.inference.device);
  absl::StatusOr<std::unique_ptr<WeightSubscriber>> sub =
      SubscribeToWeights(f.learner, s.net, base, &weights, &service);
  if (!sub.ok()) return FailRole("inference", sub.status());
  if (absl::Status st = WaitForFirstWeights(weights, **sub); !st.ok()) {
    return FailRole("inference", st);
  }
  InferenceServerOptions io = s.options.inference;
  if (s.options.sync) {
    // The barrier: every env of every worker that is not parked.
    io.full_batch = [&service] { return service.ActiveEnvs(); };
  }
  InferenceServer role(io, &service, &weights, &metrics, &timeline);
  service.SetStatusSource([&](v1::RoleStatus* st) {
    st->set_policy_version(weights.version());
    st->set_observations_per_s(rate.per_s());
    const HistogramSnapshot batches = role.batch_sizes();
    st->set_batch_mean(batches.mean());
    st->set_batches(batches.count);
  });
  absl::StatusOr<std::unique_ptr<PrometheusEndpoint>> endpoint =
      ServeMetrics(s, "inference", "", &metrics);
  if (!endpoint.ok()) return FailRole("inference", endpoint.status());
  role.Start([&service] { service.Close(); });
  auto fail = [&](const absl::Status& why) {
    role.Stop();
    service.Close();
    if (absl::Status st = role.Wait(); !st.ok()) {
      spdlog::warn("inference: {}", st.ToString());
    }
    return FailRole("inference", why);
  };
  absl::StatusOr<std::unique_ptr<RoleServer>> server = StartRoleServer(
      f.listen, s, s.limits.inference_receive_bytes, {service.service()});
  if (!server.ok()) return fail(server.status());
  const std::string address =
      Announce("inference", f.listen, (*server)->port());
  absl::StatusOr<std::unique_ptr<HeartbeatSender>> heartbeats = StartHeartbeats(
      s, f, address,
      [&service](v1::RoleStatus* st) { service.FillStatus(st); });
  if (!heartbeats.ok()) return fail(heartbeats.status());
  uint64_t last = 0;
  absl::Status last_weights_error;
  RunUntil(
      f.duration_s, s.timings.metrics_interval_s,
      [&] { return role.stopping(); },
      [&] {
        const uint64_t n = served.value();
        rate.Tick(n);
        spdlog::info("inference: version {}, {} observations (+{})",
                     weights.version(), n, n - last);
        last = n;
        const absl::Status ws = (*sub)->status();
        if (!ws.ok() && ws.ToString() != last_weights_error.ToString()) {
          spdlog::warn("inference: {}", ws.ToString());
        }
        last_weights_error = ws;
      });
  heartbeats->reset();
  (*server)->Shutdown(absl::Seconds(1));
  (*sub)->Stop();
  role.Stop();
  service.Close();
  const absl::Status st = role.Wait();
  if (!st.ok()) return FailRole("inference", st);
  return kExitOk;
}

}  // namespace rlvla3
