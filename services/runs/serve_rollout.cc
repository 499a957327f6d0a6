// `rl-vla3 serve rollout`: one rollout worker (its share of the envs) with
// its control service, talking to inference servers and learner ranks.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "rlvla3/v1/services.grpc.pb.h"
#include "runtime/config_schema.h"
#include "runtime/rate_meter.h"
#include "runtime/stop_signal.h"
#include "services/net/observation_client.h"
#include "services/net/segment_client.h"
#include "services/net/weight_client.h"
#include "services/rollout/rollout_worker.h"
#include "services/runs/serve_role.h"

namespace rlvla3 {
namespace {

constexpr int kExitOk = 0;
using Clock = std::chrono::steady_clock;

// RolloutControl: status and a Stop that ends the process's run loop.
class RolloutControlService final : public v1::RolloutControl::CallbackService {
 public:
  RolloutControlService(const NetOptions& net,
                        std::function<void(v1::RoleStatus*)> fill)
      : net_(net), fill_(std::move(fill)) {}
  bool stop_requested() const { return stop_.load(); }

  grpc::ServerUnaryReactor* GetStatus(grpc::CallbackServerContext* ctx,
                                      const v1::StatusRequest*,
                                      v1::RoleStatus* out) override {
    return AnswerNow(ctx, net_, [&] { fill_(out); });
  }
  grpc::ServerUnaryReactor* Stop(grpc::CallbackServerContext* ctx,
                                 const v1::RolloutStopRequest*,
                                 v1::RoleStatus* out) override {
    return AnswerNow(ctx, net_, [&] {
      stop_.store(true);
      fill_(out);
    });
  }

 private:
  NetOptions net_;
  std::function<void(v1::RoleStatus*)> fill_;
  std::atomic<bool> stop_{false};
};

// The worker's counters, as its status and its log line show them.
struct RolloutCounters {
  explicit RolloutCounters(MetricsRegistry* m)
      : frames(m->counter("env_frames")),
        episodes(m->counter("episodes")),
        successes(m->counter("successes")),
        faults(m->counter("env_faults")),
        parked_us(m->counter("env_time_parked_us")),
        action_wait_us(m->counter("env_time_action_wait_us")) {}

  void Fill(const RolloutWorker& w, const WeightSubscriber& sub,
            const GrpcObservationChannel& obs, const RateMeter& rate,
            v1::RoleStatus* st) const {
    st->set_env_frames_per_s(rate.per_s());
    st->set_role("rollout");
    st->set_running(w.status().ok());
    st->set_policy_version(sub.version());
    st->set_uptime_s(std::chrono::duration<double>(Clock::now() - t0).count());
    st->set_env_frames(frames.value());
    st->set_episodes(episodes.value());
    st->set_successes(successes.value());
    if (!w.status().ok()) st->set_error(w.status().ToString());
    const ObservationClientStats os = obs.stats();
    st->set_observation_failovers(os.failovers);
    st->set_inference_reconnects(os.reconnects);
    st->set_env_faults(faults.value());
  }

  // One progress line (the share of the envs' time since the last line spent
  // parked by the admission gate and waiting for actions).
  void Log(const ServeFlags& f, const WeightSubscriber& sub,
           const GrpcObservationChannel& obs, int envs) {
    const uint64_t n = frames.value(), p = parked_us.value(),
                   a = action_wait_us.value();
    const Clock::time_point now = Clock::now();
    const double env_us = std::max(
        1.0,
        envs *
            std::chrono::duration<double, std::micro>(now - last_log_).count());
    const ObservationClientStats os = obs.stats();
    spdlog::info(
        "rollout {}: {} frames (+{}), {} episodes, {} successes, "
        "{} env faults, version {}, envs parked {:.0f}% / awaiting actions "
        "{:.0f}%, inference servers up {}/{} ({} failovers, {} reconnects, "
        "{} retries)",
        f.worker, n, n - last_frames_, episodes.value(), successes.value(),
        faults.value(), sub.version(), 100.0 * (p - last_parked_) / env_us,
        100.0 * (a - last_wait_) / env_us, os.servers_up, f.inference.size(),
        os.failovers, os.reconnects, os.retries);
    last_frames_ = n;
    last_parked_ = p;
    last_wait_ = a;
    last_log_ = now;
  }

  Counter& frames;
  Counter& episodes;
  Counter& successes;
  Counter& faults;
  Counter& parked_us;
  Counter& action_wait_us;
  const Clock::time_point t0 = Clock::now();

 private:
  uint64_t last_frames_ = 0, last_parked_ = 0, last_wait_ = 0;
  Clock::time_point last_log_ = t0;
};

// This worker's envs: global ids [worker x envs, ...), env i seeded with
// seed + its global id.
absl::StatusOr<RolloutWorkerOptions> WorkerOptions(const ServeFlags& f,
                                                   const RoleSetup& s) {
  if (f.learner.empty() || f.inference.empty()) {
    return absl::InvalidArgumentError("needs --learner and --inference");
  }
  if (f.worker < 0 || f.worker >= s.workers) {
    return absl::InvalidArgumentError(
        absl::StrCat("--worker ", f.worker,
                     " is not below cluster.rollout_workers ", s.workers));
  }
  if (absl::Status st = CheckRanksGetEqualShares(s, f.learner_ranks.size());
      !st.ok()) {
    return st;
  }
  RolloutWorkerOptions ro = s.options.rollout;
  const int offset = f.worker * ro.pool.num_envs;
  ro.pool.seed += static_cast<uint64_t>(offset);  // env i: seed + global id
  ro.pool.first_env_id = offset;
  ro.seed += static_cast<uint64_t>(offset);
  // A fresh incarnation id per process start (SEED RL): the learner tells a
  // restarted worker's segments apart.
  ro.run_id = std::random_device{}() ^
              static_cast<uint64_t>(Clock::now().time_since_epoch().count());
  return ro;
}

// Segments to the learner ranks, routed by global env id.
SegmentClientOptions SegmentOptions(const ServeFlags& f, const RoleSetup& s,
                                    int offset, int envs,
                                    double role_timeout_s) {
  SegmentClientOptions sc;
  sc.targets = f.learner_ranks;
  // GRPO: a group's episodes must meet on one learner rank.
  sc.route_block = s.route_block;
  sc.first_env_id = offset;
  sc.shape = s.options.segment_shape;
  sc.pool = 2 * envs + 4;
  sc.in_flight = 4;
  // As long as the observation streams wait for a lost inference server.
  sc.reconnect_timeout = absl::Seconds(6 * role_timeout_s);
  return sc;
}

}  // namespace

int ServeRollout(const ServeFlags& f, RoleSetup& s) {
  absl::StatusOr<RolloutWorkerOptions> options = WorkerOptions(f, s);
  if (!options.ok()) return FailRole("rollout", options.status());
  const RolloutWorkerOptions& ro = *options;
  const int envs = ro.pool.num_envs;
  const int offset = ro.pool.first_env_id;
  MetricsRegistry metrics;
  absl::StatusOr<std::unique_ptr<PrometheusEndpoint>> endpoint =
      ServeMetrics(s, "rollout", absl::StrCat(f.worker), &metrics);
  if (!endpoint.ok()) return FailRole("rollout", endpoint.status());
  StageTimeline timeline(false);
  absl::StatusOr<std::unique_ptr<GrpcObservationChannel>> obs =
      GrpcObservationChannel::Create(
          {f.inference, offset, envs, s.shape,
           // Long enough for `up` to restart a lost inference server.
           absl::Seconds(6 * s.timings.role_timeout_s), s.options.sync},
          s.net);
  if (!obs.ok()) return FailRole("rollout", obs.status());
  absl::StatusOr<std::unique_ptr<GrpcSegmentChannel>> seg =
      GrpcSegmentChannel::Create(
          SegmentOptions(f, s, offset, envs, s.timings.role_timeout_s), s.net);
  if (!seg.ok()) return FailRole("rollout", seg.status());
  absl::StatusOr<std::unique_ptr<RolloutWorker>> worker =
      RolloutWorker::Create(ro, obs->get(), seg->get(), &metrics, &timeline);
  if (!worker.ok()) return FailRole("rollout", worker.status());
  RolloutWorker* w = worker->get();
  // Parked envs resume on the version their inference server serves, in
  // both modes: the learner's notice arrives before the weights reach the
  // server, and decisions made then would run one version staler than the
  // gate allows and be dropped (docs/experiments.md, issue 28). The
  // learner's stream only reports its version here (status, log line).
  (*obs)->SetVersionHandler([w](uint64_t v) { w->OnPolicyVersion(v); });
  WeightSubscriber::Callbacks cb;
  absl::StatusOr<std::unique_ptr<WeightSubscriber>> sub =
      WeightSubscriber::Start(
          {f.learner, true, s.parts.policy->kind(), ro.base_version}, s.net,
          std::move(cb));
  if (!sub.ok()) return FailRole("rollout", sub.status());
  RolloutCounters counters(&metrics);
  RateMeter rate;
  auto fill_status = [&](v1::RoleStatus* st) {
    counters.Fill(*w, **sub, **obs, rate, st);
  };
  RolloutControlService control(s.net, fill_status);
  absl::StatusOr<std::unique_ptr<RoleServer>> server =
      StartRoleServer(f.listen, s, s.limits.rollout_receive_bytes, {&control});
  if (!server.ok()) return FailRole("rollout", server.status());
  w->Start();
  const std::string address = Announce("rollout", f.listen, (*server)->port());
  absl::StatusOr<std::unique_ptr<HeartbeatSender>> heartbeats = StartHeartbeats(
      s, f, address, fill_status, [w](uint64_t incarnation, uint64_t starved) {
        w->OnLearnerStarved(incarnation, starved);
      });
  absl::Status failure = heartbeats.status();
  auto check = [&] {
    for (const absl::Status& st :
         {w->status(), (*obs)->status(), (*seg)->status()}) {
      if (!st.ok()) {
        failure = st;
        return true;
      }
    }
    return control.stop_requested();
  };
  if (failure.ok()) {
    RunUntil(f.duration_s, s.timings.metrics_interval_s, check, [&] {
      rate.Tick(counters.frames.value());
      counters.Log(f, **sub, **obs, envs);
    });
  }
  if (heartbeats.ok()) heartbeats->reset();
  w->Stop();
  (*obs)->Close();
  (*seg)->Close();
  (*sub)->Stop();
  (*server)->Shutdown(absl::Seconds(1));
  if (!failure.ok()) return FailRole("rollout", failure);
  return kExitOk;
}

}  // namespace rlvla3
