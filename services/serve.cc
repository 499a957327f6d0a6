#include "services/serve.h"

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <thread>

#include "absl/strings/str_cat.h"
#include "rlvla3/v1/services.grpc.pb.h"
#include "runtime/rate_meter.h"
#include "runtime/stop_signal.h"
#include "runtime/weight_channel.h"
#include "services/engine_config.h"
#include "services/inference/inference_server.h"
#include "services/learner/c10d_reducer.h"
#include "services/learner/gradient_reducer.h"
#include "services/learner/learner.h"
#include "services/net/grpc_common.h"
#include "services/net/inference_service.h"
#include "services/net/learner_service.h"
#include "services/net/observation_client.h"
#include "services/net/roster.h"
#include "services/net/segment_client.h"
#include "services/net/weight_client.h"
#include "services/rollout/rollout_worker.h"
#include "services/run_settings.h"

namespace rlvla3 {
namespace {

constexpr int kExitOk = 0, kExitFailure = 1, kExitUsage = 2;
using Clock = std::chrono::steady_clock;

// What every role process starts from: the policy (its kind, chunk and text
// length shape everything), every role's options, the network options.
struct RoleSetup {
  EngineParts parts;
  LocalEngineOptions options;
  NetOptions net;
  WireShape shape;
  int workers = 1;      // rollout processes
  int global_envs = 0;  // workers x env.num_envs
};

absl::StatusOr<RoleSetup> Setup(const Config& c) {
  RoleSetup s;
  torch::manual_seed(static_cast<uint64_t>(c.run.seed));
  absl::StatusOr<EngineParts> parts = BuildEngineParts(c);
  if (!parts.ok()) return parts.status();
  s.parts = *std::move(parts);
  absl::StatusOr<LocalEngineOptions> o =
      LocalEngineOptionsFromConfig(c, s.parts);
  if (!o.ok()) return o.status();
  s.options = *std::move(o);
  absl::StatusOr<NetOptions> net = NetOptionsFromConfig(c);
  if (!net.ok()) return net.status();
  s.net = *net;
  // Message limits from what crosses: a whole segment, a weight chunk.
  const SegmentShape& sh = s.options.segment_shape;
  const int64_t segment_bytes =
      int64_t{sh.capacity + 1} * sh.width * sh.height * 3 * 2 + (1 << 20);
  s.net.max_message_bytes = std::max<int64_t>(64 << 20, 2 * segment_bytes);
  s.shape =
      WireShape{sh.height, sh.width, sh.proprio_dim, sh.chunk, sh.action_dim};
  s.workers = static_cast<int>(c.cluster.rollout_workers);
  s.global_envs = GlobalEnvs(s.options, RunLayout{s.workers});
  return s;
}

// Polls every `interval` until `done()` or a signal; calls `tick` each time.
void RunUntil(double duration_s, double interval_s,
              const std::function<bool()>& done,
              const std::function<void()>& tick) {
  const auto t0 = Clock::now();
  auto next = t0;
  const auto step = std::chrono::microseconds(
      static_cast<int64_t>(std::max(0.05, interval_s) * 1e6));
  for (;;) {
    next += step;
    while (Clock::now() < next && !done() && !StopSignalled()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (done() || StopSignalled()) return;
    if (duration_s > 0 &&
        std::chrono::duration<double>(Clock::now() - t0).count() >=
            duration_s) {
      return;
    }
    tick();
  }
}

// Prints "ROLE: serving on HOST:PORT" and returns that address.
std::string Announce(const char* role, const std::string& listen, int port) {
  const std::string address =
      absl::StrCat(listen.substr(0, listen.rfind(':')), ":", port);
  std::printf("%s: serving on %s\n", role, address.c_str());
  std::fflush(stdout);
  return address;
}

// Heartbeats of a role to the learner's roster.
std::unique_ptr<HeartbeatSender> StartHeartbeats(
    const Config& c, const ServeFlags& f, const NetOptions& net,
    const std::string& address, std::function<void(v1::RoleStatus*)> fill) {
  return HeartbeatSender::Start(
      {f.learner, address, absl::Seconds(c.cluster.heartbeat_s)}, net,
      std::move(fill));
}

// The roles silent past the timeout, for a progress line ("" if none).
std::string SilentRoles(const RosterService& roster) {
  std::string out;
  const v1::RoleRoster now = roster.Snapshot();
  for (const v1::RosterEntry& e : now.roles()) {
    if (!e.silent()) continue;
    absl::StrAppend(&out, out.empty() ? "" : ", ", e.status().role(), " ",
                    e.address(), " (", static_cast<int>(e.silent_s()), " s)");
  }
  return out;
}

int Fail(const char* role, const absl::Status& s) {
  spdlog::error("{}: {}", role, s.ToString());
  return IsConfigError(s) ? kExitUsage : kExitFailure;
}

// This process's place in the data-parallel learner (WORLD_SIZE ranks, as
// torchrun's variables say; alone without them): the group, joined.
absl::StatusOr<std::unique_ptr<GradientReducer>> JoinLearnerGroup(
    const Config& c) {
  absl::StatusOr<ProcessGroupOptions> o = ProcessGroupOptionsFromEnvironment(
      c.cluster.learner_backend, absl::Seconds(c.cluster.collective_timeout_s));
  if (!o.ok()) return o.status();
  if (o->world_size == 1) return MakeLocalReducer();
  spdlog::info("learner: rank {} of {} joining the group at {}:{} ({})",
               o->rank, o->world_size, o->master_addr, o->master_port,
               o->backend);
  return ConnectProcessGroup(*o);
}

// Envs whose segments go to one learner rank together: a GRPO group.
int RouteBlock(const Config& c) {
  return c.rl.algorithm == "grpo" ? static_cast<int>(c.rl.grpo_group_size) : 1;
}

// Segments are routed to learner ranks by global env id (in blocks of
// RouteBlock envs): every rank must get the same number of envs, or a rank
// starves while the others wait for it in the gradient all-reduce.
absl::Status CheckRanksGetEqualShares(const Config& c, int global_envs,
                                      size_t ranks) {
  const int block = RouteBlock(c);
  if (ranks <= 1) return absl::OkStatus();
  if (global_envs % block != 0 ||
      (global_envs / block) % static_cast<int>(ranks) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(global_envs,
                     " envs (cluster.rollout_workers x env.num_envs) in "
                     "blocks of ",
                     block,
                     " (rl.grpo_group_size for GRPO, else 1) do not "
                     "split evenly over ",
                     ranks, " learner ranks"));
  }
  return absl::OkStatus();
}

// The learner role's options in a process: its share of the global batch,
// its group, where its checkpoints go.
absl::StatusOr<LearnerRoleOptions> LearnerProcessOptions(
    const Config& c, RoleSetup& s, GradientReducer* reducer) {
  LearnerRoleOptions lo = s.options.learner;
  const int world = reducer->world_size();
  const int64_t global = lo.core.global_units * s.workers;
  if (global % world != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "learner: the global batch (", global,
        " units: rl.global_batch x cluster.rollout_workers) does not split "
        "evenly over ",
        world, " ranks"));
  }
  if (absl::Status st = CheckRanksGetEqualShares(c, s.global_envs,
                                                 static_cast<size_t>(world));
      !st.ok()) {
    return st;
  }
  lo.core.global_units = global / world;
  // Weights leave over the wire: snapshots stay on the learner's device.
  lo.core.publish_device = lo.core.device;
  lo.whole_batch = s.options.sync;  // sync: train once the batch is complete
  lo.reducer = reducer;
  lo.checkpoint_dir =
      absl::StrCat(c.run.out_dir, "/", c.run.name, "/checkpoints");
  return lo;
}

int ServeLearner(const Config& c, const ServeFlags& f, RoleSetup& s) {
  if (absl::Status st = CheckRoleDevices(c, false, true); !st.ok())
    return Fail("learner", st);
  absl::StatusOr<std::unique_ptr<GradientReducer>> group = JoinLearnerGroup(c);
  if (!group.ok()) return Fail("learner", group.status());
  absl::StatusOr<LearnerRoleOptions> role =
      LearnerProcessOptions(c, s, group->get());
  if (!role.ok()) return Fail("learner", role.status());
  const LearnerRoleOptions& lo = *role;
  MetricsRegistry metrics;
  StageTimeline timeline(false);
  LocalWeightChannel<Policy> weights;
  LearnerServiceOptions so;
  so.shape = s.options.segment_shape;
  so.segment_count = s.options.segment_count * s.workers;
  const RunLayout layout{s.workers, RouteBlock(c), (*group)->world_size()};
  so.limits = SegmentLimitsOf(s.options, layout);
  so.version_slack = (*group)->rank() > 0 ? 1 : 0;
  LearnerService service(so, s.net, &weights, &metrics);
  Learner learner(s.parts.policy, lo, s.parts.version, &service, &weights,
                  &metrics, &timeline);
  service.SetVersionSource([&learner] { return learner.version(); });
  v1::RunSettings settings;
  FillRunSettings(s.options, layout, &settings);
  service.SetRunSettings(settings);
  Counter& trained = metrics.counter("trained_samples");
  Counter& steps = metrics.counter("optimizer_steps");
  Counter& expired = metrics.counter("expired_episodes");
  Counter& dropped = metrics.counter("dropped_samples");
  RateMeter rate;
  service.SetStatusSource([&](v1::RoleStatus* st) {
    st->set_trained_samples(trained.value());
    st->set_dropped_samples(dropped.value());
    st->set_discarded_segments(expired.value());
    st->set_optimizer_steps(steps.value());
    st->set_trained_samples_per_s(rate.per_s());
  });
  RosterService roster(s.net, absl::Seconds(c.cluster.role_timeout_s));
  absl::StatusOr<std::unique_ptr<RoleServer>> server =
      RoleServer::Start(f.listen, s.net, {service.service(), &roster});
  if (!server.ok()) return Fail("learner", server.status());
  learner.Start([&service] { service.Close(); },
                [](const LearnerStepStats&) {});
  Announce("learner", f.listen, (*server)->port());
  spdlog::info(
      "learner: rank {} of {}: {} of the global batch from {} "
      "rollout worker(s)",
      (*group)->rank(), (*group)->world_size(), lo.core.global_units,
      s.workers);
  RunUntil(
      f.duration_s, c.metrics.interval_s,
      [&] { return learner.stopping() || learner.done(); },
      [&] {
        rate.Tick(trained.value());
        spdlog::info(
            "learner: version {}, {} steps, {} samples ({:.0f}/s), "
            "{} segments waiting, {} roles reporting",
            learner.version(), steps.value(), trained.value(), rate.per_s(),
            service.depth(), roster.Snapshot().roles_size());
        if (const std::string quiet = SilentRoles(roster); !quiet.empty()) {
          spdlog::warn("learner: silent past cluster.role_timeout_s: {}",
                       quiet);
        }
      });
  (*server)->Shutdown(absl::Seconds(1));
  service.Close();
  learner.Stop();
  const absl::Status st = learner.Wait();
  if (!st.ok() && StopSignalled() && (*group)->world_size() > 1) {
    // Asked to stop: a peer that stopped first ends this rank's collective.
    spdlog::info("learner: rank {} stopped with its group ({})",
                 (*group)->rank(), std::string(st.message()));
  } else if (!st.ok()) {
    return Fail("learner", st);
  }
  spdlog::info("learner: stopped at version {} after {} optimizer steps",
               learner.version(), steps.value());
  return kExitOk;
}

int ServeInference(const Config& c, const ServeFlags& f, RoleSetup& s) {
  if (f.learner.empty()) {
    return Fail("inference", absl::InvalidArgumentError("needs --learner"));
  }
  if (absl::Status st = CheckRoleDevices(c, true, false); !st.ok())
    return Fail("inference", st);
  MetricsRegistry metrics;
  StageTimeline timeline(false);
  LocalWeightChannel<Policy> weights;
  InferenceServiceOptions so;
  so.shape = s.shape;
  so.num_envs = s.global_envs;
  so.num_tasks = static_cast<int>(s.options.inference.text.size(0));
  so.request_queue = s.options.request_queue;
  so.request_queue.capacity =
      std::max<size_t>(so.request_queue.capacity, size_t(s.global_envs));
  InferenceService service(so, s.net, &metrics);
  Counter& served = metrics.counter("observations_served");
  RateMeter rate;
  // Weights come from the learner only: the server starts serving with the
  // learner's first version, loaded into a copy of this process's policy.
  std::shared_ptr<TrainablePolicy> base = s.parts.policy;
  base->To(s.options.inference.device);
  WeightSubscriber::Callbacks cb;
  cb.on_weights = [&weights, &service,
                   base](AssembledWeights w) -> absl::Status {
    std::shared_ptr<TrainablePolicy> p = base->Snapshot(w.version);
    if (absl::Status st = p->LoadState(w.state); !st.ok()) return st;
    weights.Publish(p, w.version);
    // Sync: envs resume on the version this server serves from now on.
    service.AnnounceVersion(w.version);
    return absl::OkStatus();
  };
  absl::StatusOr<std::unique_ptr<WeightSubscriber>> sub =
      WeightSubscriber::Start({f.learner, false, base->kind(), 0}, s.net,
                              std::move(cb));
  if (!sub.ok()) return Fail("inference", sub.status());
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  while (weights.Latest().value == nullptr) {
    if (!(*sub)->status().ok()) return Fail("inference", (*sub)->status());
    if (Clock::now() > deadline || StopSignalled()) {
      return Fail("inference", absl::DeadlineExceededError(
                                   "no weights from the learner in 60 s"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
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
  role.Start([&service] { service.Close(); });
  absl::StatusOr<std::unique_ptr<RoleServer>> server =
      RoleServer::Start(f.listen, s.net, {service.service()});
  if (!server.ok()) {
    role.Stop();
    service.Close();
    if (absl::Status st = role.Wait(); !st.ok()) {
      spdlog::warn("inference: {}", st.ToString());
    }
    return Fail("inference", server.status());
  }
  const std::string address =
      Announce("inference", f.listen, (*server)->port());
  std::unique_ptr<HeartbeatSender> heartbeats = StartHeartbeats(
      c, f, s.net, address,
      [&service](v1::RoleStatus* st) { service.FillStatus(st); });
  uint64_t last = 0;
  absl::Status last_weights_error;
  RunUntil(
      f.duration_s, c.metrics.interval_s, [&] { return role.stopping(); },
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
  heartbeats.reset();
  (*server)->Shutdown(absl::Seconds(1));
  (*sub)->Stop();
  role.Stop();
  service.Close();
  const absl::Status st = role.Wait();
  if (!st.ok()) return Fail("inference", st);
  return kExitOk;
}

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

int ServeRollout(const Config& c, const ServeFlags& f, RoleSetup& s) {
  if (f.learner.empty() || f.inference.empty()) {
    return Fail("rollout",
                absl::InvalidArgumentError("needs --learner and --inference"));
  }
  if (f.worker < 0 || f.worker >= s.workers) {
    return Fail("rollout", absl::InvalidArgumentError(
                               absl::StrCat("--worker ", f.worker,
                                            " is not below "
                                            "cluster.rollout_workers ",
                                            s.workers)));
  }
  RolloutWorkerOptions ro = s.options.rollout;
  const int envs = ro.pool.num_envs;
  const int offset = f.worker * envs;
  ro.pool.seed += static_cast<uint64_t>(offset);  // env i: seed + global id
  ro.pool.first_env_id = offset;
  ro.seed += static_cast<uint64_t>(offset);
  // A fresh incarnation id per process start (SEED RL): the learner tells a
  // restarted worker's segments apart.
  ro.run_id = std::random_device{}() ^
              static_cast<uint64_t>(Clock::now().time_since_epoch().count());
  MetricsRegistry metrics;
  StageTimeline timeline(false);
  absl::StatusOr<std::unique_ptr<GrpcObservationChannel>> obs =
      GrpcObservationChannel::Create(
          {f.inference, offset, envs, s.shape,
           // Long enough for `up` to restart a lost inference server.
           absl::Seconds(6 * c.cluster.role_timeout_s), s.options.sync},
          s.net);
  if (!obs.ok()) return Fail("rollout", obs.status());
  SegmentClientOptions sc;
  sc.targets = f.learner_ranks;
  // GRPO: a group's episodes must meet on one learner rank.
  sc.route_block = RouteBlock(c);
  sc.first_env_id = offset;
  if (absl::Status st =
          CheckRanksGetEqualShares(c, s.global_envs, f.learner_ranks.size());
      !st.ok()) {
    return Fail("rollout", st);
  }
  sc.shape = s.options.segment_shape;
  sc.pool = 2 * envs + 4;
  sc.in_flight = 4;
  absl::StatusOr<std::unique_ptr<GrpcSegmentChannel>> seg =
      GrpcSegmentChannel::Create(sc, s.net);
  if (!seg.ok()) return Fail("rollout", seg.status());
  absl::StatusOr<std::unique_ptr<RolloutWorker>> worker =
      RolloutWorker::Create(ro, obs->get(), seg->get(), &metrics, &timeline);
  if (!worker.ok()) return Fail("rollout", worker.status());
  RolloutWorker* w = worker->get();
  WeightSubscriber::Callbacks cb;
  if (s.options.sync) {
    // Lock-step: envs resume on the version their inference server serves
    // (the learner's may not have reached it yet).
    (*obs)->SetVersionHandler([w](uint64_t v) { w->OnPolicyVersion(v); });
  } else {
    cb.on_version = [w](uint64_t v) { w->OnPolicyVersion(v); };
  }
  absl::StatusOr<std::unique_ptr<WeightSubscriber>> sub =
      WeightSubscriber::Start(
          {f.learner, true, s.parts.policy->kind(), ro.base_version}, s.net,
          std::move(cb));
  if (!sub.ok()) return Fail("rollout", sub.status());
  Counter& frames = metrics.counter("env_frames");
  Counter& episodes = metrics.counter("episodes");
  Counter& successes = metrics.counter("successes");
  Counter& faults = metrics.counter("env_faults");
  const auto t0 = Clock::now();
  RateMeter rate;
  auto fill_status = [&](v1::RoleStatus* st) {
    st->set_env_frames_per_s(rate.per_s());
    st->set_role("rollout");
    st->set_running(w->status().ok());
    st->set_policy_version((*sub)->version());
    st->set_uptime_s(std::chrono::duration<double>(Clock::now() - t0).count());
    st->set_env_frames(frames.value());
    st->set_episodes(episodes.value());
    st->set_successes(successes.value());
    if (!w->status().ok()) st->set_error(w->status().ToString());
    const ObservationClientStats os = (*obs)->stats();
    st->set_observation_failovers(os.failovers);
    st->set_inference_reconnects(os.reconnects);
    st->set_env_faults(faults.value());
  };
  RolloutControlService control(s.net, fill_status);
  absl::StatusOr<std::unique_ptr<RoleServer>> server =
      RoleServer::Start(f.listen, s.net, {&control});
  if (!server.ok()) return Fail("rollout", server.status());
  w->Start();
  const std::string address = Announce("rollout", f.listen, (*server)->port());
  std::unique_ptr<HeartbeatSender> heartbeats =
      StartHeartbeats(c, f, s.net, address, fill_status);
  absl::Status failure;
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
  uint64_t last = 0;
  RunUntil(f.duration_s, c.metrics.interval_s, check, [&] {
    const uint64_t n = frames.value();
    rate.Tick(n);
    const ObservationClientStats os = (*obs)->stats();
    spdlog::info(
        "rollout {}: {} frames (+{}), {} episodes, {} successes, "
        "{} env faults, version {}, inference servers up {}/{} ({} "
        "failovers, {} reconnects, {} retries)",
        f.worker, n, n - last, episodes.value(), successes.value(),
        faults.value(), (*sub)->version(), os.servers_up, f.inference.size(),
        os.failovers, os.reconnects, os.retries);
    last = n;
  });
  heartbeats.reset();
  w->Stop();
  (*obs)->Close();
  (*seg)->Close();
  (*sub)->Stop();
  (*server)->Shutdown(absl::Seconds(1));
  if (!failure.ok()) return Fail("rollout", failure);
  return kExitOk;
}

}  // namespace

absl::StatusOr<NetOptions> NetOptionsFromConfig(const Config& c) {
  absl::StatusOr<std::string> token =
      ReadToken(c.cluster.token_file, "RLVLA3_TOKEN");
  if (!token.ok()) return token.status();
  NetOptions n;
  n.token = *token;
  return n;
}

int RunServe(const Config& c, const ServeFlags& flags) {
  absl::StatusOr<RoleSetup> s = Setup(c);
  if (!s.ok()) return Fail(flags.role.c_str(), s.status());
  InstallStopSignalHandlers();
  if (flags.role == "learner") return ServeLearner(c, flags, *s);
  if (flags.role == "inference") return ServeInference(c, flags, *s);
  if (flags.role == "rollout") return ServeRollout(c, flags, *s);
  return Fail("serve", absl::InvalidArgumentError(
                           "role must be learner, inference or rollout"));
}

}  // namespace rlvla3
