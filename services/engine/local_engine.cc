#include "services/engine/local_engine.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <mutex>
#include <thread>

#include "runtime/channels/observation_channel.h"
#include "runtime/channels/segment_channel.h"
#include "runtime/channels/weight_channel.h"

namespace rlvla3 {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

struct LocalEngine::Impl {
  LocalEngineOptions options;
  TextTokenizer tokenizer;
  mutable MetricsRegistry metrics;  // thread-safe; lookups create
  StageTimeline timeline;
  // Channels first: the roles hold pointers to them (destroyed after).
  LocalObservationChannel observations;
  LocalSegmentChannel segments;
  LocalWeightChannel<Policy> weights;
  std::unique_ptr<Learner> learner;
  std::unique_ptr<InferenceServer> inference;
  std::unique_ptr<RolloutWorker> rollout;

  Gauge* request_depth = nullptr;
  Gauge* segment_depth = nullptr;
  Counter* trained = nullptr;
  Counter* episodes = nullptr;
  double end_s = 0;
  mutable std::mutex mu;
  std::vector<LearningPoint> curve ABSL_GUARDED_BY(mu);

  Impl(const LocalEngineOptions& o)
      : options(o),
        timeline(o.timeline),
        observations(o.request_queue),
        segments(o.segment_shape, o.segment_count, o.segment_queue) {}

  void CloseChannels() {
    observations.Close();
    segments.Close();
  }
  bool RoleStopped() const {
    return inference->stopping() || learner->stopping() ||
           !rollout->status().ok() || learner->done();
  }
};

LocalEngine::LocalEngine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

LocalEngine::~LocalEngine() {
  // Env threads first (they call into the channels and the other roles).
  if (impl_->rollout) impl_->rollout->Stop();
  impl_->CloseChannels();
}

absl::StatusOr<std::unique_ptr<LocalEngine>> LocalEngine::Create(
    const LocalEngineOptions& options, EngineParts parts) {
  if (options.request_queue.overflow != OverflowPolicy::kBlock ||
      options.segment_queue.overflow != OverflowPolicy::kBlock) {
    return absl::InvalidArgumentError(
        "engine: the request and segment queues must block on overflow (an "
        "observation or a segment is never dropped silently; staleness drops "
        "are the learner's)");
  }
  auto impl = std::make_unique<Impl>(options);
  Impl& m = *impl;
  m.tokenizer = parts.tokenizer;
  LearnerRoleOptions lo = options.learner;
  lo.whole_batch = options.sync;
  m.learner =
      std::make_unique<Learner>(parts.policy, lo, parts.version, &m.segments,
                                &m.weights, &m.metrics, &m.timeline);
  absl::StatusOr<std::unique_ptr<RolloutWorker>> worker = RolloutWorker::Create(
      options.rollout, &m.observations, &m.segments, &m.metrics, &m.timeline);
  if (!worker.ok()) return worker.status();
  m.rollout = *std::move(worker);
  InferenceServerOptions io = options.inference;
  if (options.sync) {
    RolloutWorker* w = m.rollout.get();
    const int envs = options.rollout.pool.num_envs;
    io.full_batch = [w, envs] { return envs - w->parked(); };
  }
  m.inference = std::make_unique<InferenceServer>(
      io, &m.observations, &m.weights, &m.metrics, &m.timeline);
  RolloutWorker* w = m.rollout.get();
  m.weights.Subscribe([w](uint64_t v) { w->OnPolicyVersion(v); });
  // One process, one learner incarnation: its starvation reaches the gate
  // on the learner thread (as its versions do).
  m.learner->SetStarvedHook([w](uint64_t n) { w->OnLearnerStarved(1, n); });
  m.request_depth = &m.metrics.gauge("queue_request_depth");
  m.segment_depth = &m.metrics.gauge("queue_trajectory_depth");
  m.trained = &m.metrics.counter("trained_samples");
  m.episodes = &m.metrics.counter("episodes");
  return std::unique_ptr<LocalEngine>(new LocalEngine(std::move(impl)));
}

absl::Status LocalEngine::Run(const EngineHooks& hooks) {
  Impl& m = *impl_;
  const LocalEngineOptions& o = m.options;
  const auto t0 = Clock::now();
  m.metrics.Snapshot();  // rates start now
  spdlog::info(
      "engine: {} mode, {}, {} envs on {} worker threads, {} inference "
      "actor(s), global batch {} {}, micro-batch {}, max policy lag {}",
      o.sync ? "sync" : "async", o.algorithm, o.rollout.pool.num_envs,
      m.rollout->num_threads(), o.sync ? 1 : o.inference.actors,
      o.learner.core.global_units, o.rollout.grpo ? "episodes" : "samples",
      o.learner.core.micro_batch, o.rollout.max_policy_lag);
  Impl* self = &m;
  auto close = [self] { self->CloseChannels(); };
  const auto began = std::chrono::steady_clock::now();
  m.learner->Start(close, [self, &hooks, began](const LearnerStepStats& st) {
    const double t =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - began)
            .count();
    {
      std::lock_guard<std::mutex> lock(self->mu);
      self->curve.push_back({static_cast<int64_t>(self->trained->value()),
                             st.version, self->rollout->RollingSuccess(),
                             self->episodes->value(), t});
    }
    if (hooks.on_step) hooks.on_step(st);
  });
  m.inference->Start(close);
  m.rollout->Start();
  const auto interval = std::chrono::microseconds(
      static_cast<int64_t>(o.metrics_interval_s * 1e6));
  auto next = Clock::now();
  auto stop_now = [&] {
    return m.RoleStopped() || stop_requested_.load(std::memory_order_relaxed) ||
           (hooks.should_stop && hooks.should_stop());
  };
  for (;;) {
    next += interval;
    while (Clock::now() < next && !stop_now()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    m.request_depth->Set(
        static_cast<double>(m.observations.requests().depth()));
    m.segment_depth->Set(static_cast<double>(m.segments.depth()));
    if (hooks.on_interval) hooks.on_interval(m.metrics.Snapshot());
    const double elapsed =
        std::chrono::duration<double>(Clock::now() - t0).count();
    if (stop_now() || elapsed >= o.duration_s) break;
  }
  m.end_s = std::chrono::duration<double>(Clock::now() - t0).count();
  // Stop: the env threads first (no more submissions), then close the
  // channels (stages blocked on them return), then wait for every role.
  const absl::Status rollout_status = m.rollout->status();
  m.rollout->Stop();
  m.inference->Stop();
  m.learner->Stop();
  const absl::Status inference_status = m.inference->Wait();
  const absl::Status learner_status = m.learner->Wait();
  for (const absl::Status& s :
       {rollout_status, inference_status, learner_status}) {
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

EngineSummary LocalEngine::Summary() const {
  const Impl& m = *impl_;
  MetricsRegistry& r = m.metrics;
  EngineSummary s;
  s.mode = m.options.sync ? "sync" : "async";
  s.wall_s = m.end_s;
  s.env_frames = r.counter("env_frames").value();
  s.decisions = r.counter("decisions").value();
  s.episodes = r.counter("episodes").value();
  s.successes = r.counter("successes").value();
  s.trained_samples =
      static_cast<int64_t>(r.counter("trained_samples").value());
  s.optimizer_steps =
      static_cast<int64_t>(r.counter("optimizer_steps").value());
  s.skipped_steps = static_cast<int64_t>(r.counter("skipped_steps").value());
  s.dropped_samples =
      static_cast<int64_t>(r.counter("dropped_samples").value());
  s.aged_out_samples =
      static_cast<int64_t>(r.counter("aged_out_samples").value());
  s.parks = m.rollout->parks();
  const double wall = std::max(1e-9, m.end_s);
  s.env_frames_per_s = s.env_frames / wall;
  s.trained_samples_per_s = s.trained_samples / wall;
  s.s_per_step = s.optimizer_steps > 0 ? wall / s.optimizer_steps : 0;
  const std::vector<int64_t> lag_hist = m.learner->LagHistogram();
  int64_t n = 0;
  double sum = 0;
  for (size_t i = 0; i < lag_hist.size(); ++i) {
    n += lag_hist[i];
    sum += static_cast<double>(i) * lag_hist[i];
    if (lag_hist[i] > 0) s.lag_max = static_cast<double>(i);
  }
  s.lag_mean = n > 0 ? sum / n : 0;
  s.inference_batch_mean =
      r.histogram("inference_batch_size", std::vector<double>{1})
          .Snapshot()
          .mean();
  auto pct = [wall](const StageTimer& t) {
    return 100.0 * t.busy_ns() / 1e9 / wall;
  };
  const StageTimer& env = r.stage("stage_env");
  const StageTimer& inf = r.stage("stage_inference");
  const StageTimer& learn = r.stage("stage_learner");
  s.busy_env = pct(env) / std::max(1, m.rollout->num_threads());
  s.busy_inference =
      pct(inf) / std::max(1, m.options.sync ? 1 : m.options.inference.actors);
  s.busy_learner = pct(learn);
  s.cpu_s_env = env.busy_ns() / 1e9;
  s.cpu_s_inference = inf.busy_ns() / 1e9;
  s.cpu_s_learner = learn.busy_ns() / 1e9;
  s.rolling_success = m.rollout->RollingSuccess();
  s.version = m.learner->version();
  return s;
}

MetricsRegistry& LocalEngine::metrics() { return impl_->metrics; }

std::vector<StageInterval> LocalEngine::Timeline() const {
  return impl_->timeline.Intervals();
}

std::vector<LocalEngine::LearningPoint> LocalEngine::LearningCurve() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->curve;
}

std::vector<EpisodeRecord> LocalEngine::Episodes() const {
  return impl_->rollout->Episodes();
}

std::vector<int64_t> LocalEngine::LagHistogram() const {
  return impl_->learner->LagHistogram();
}

TrainablePolicy& LocalEngine::policy() { return impl_->learner->policy(); }

const TextTokenizer& LocalEngine::tokenizer() const { return impl_->tokenizer; }

std::vector<SuccessBucket> SuccessByStartVersion(
    const std::vector<EpisodeRecord>& episodes, int buckets) {
  std::vector<SuccessBucket> out;
  uint64_t min_v = std::numeric_limits<uint64_t>::max(), max_v = 0;
  for (const auto& e : episodes) {
    if (e.late) continue;
    min_v = std::min(min_v, e.start_version);
    max_v = std::max(max_v, e.start_version);
  }
  if (min_v > max_v || buckets < 1) return out;
  const uint64_t span = max_v - min_v + 1;
  const uint64_t n = std::min<uint64_t>(static_cast<uint64_t>(buckets), span);
  out.resize(n);
  for (uint64_t b = 0; b < n; ++b) {
    out[b].version_lo = min_v + b * span / n;
    out[b].version_hi = min_v + (b + 1) * span / n - 1;
  }
  for (const auto& e : episodes) {
    if (e.late) continue;
    SuccessBucket& b = out[(e.start_version - min_v) * n / span];
    ++b.episodes;
    b.successes += e.success ? 1 : 0;
    b.mean_start_frame += static_cast<double>(e.start_frame);
  }
  for (auto& b : out) {
    if (b.episodes) b.mean_start_frame /= static_cast<double>(b.episodes);
  }
  return out;
}

}  // namespace rlvla3
