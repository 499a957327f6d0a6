#include "services/rollout/rollout_worker.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <deque>
#include <mutex>

#include "absl/base/thread_annotations.h"
#include "envs/task.h"
#include "runtime/steady_clock.h"
#include "services/rollout/admission_gate.h"
#include "services/rollout/env_cursor.h"

namespace rlvla3 {

struct RolloutWorker::Impl {
  RolloutWorkerOptions options;
  int num_envs = 0;
  ObservationChannel* observations = nullptr;
  SegmentChannel* segments = nullptr;
  StageTimeline* timeline = nullptr;
  std::unique_ptr<AdmissionGate> gate;
  std::vector<EnvCursor> cursors;
  std::unique_ptr<EnvPool> pool;
  std::atomic<bool> stopping{false};

  Counter* frames = nullptr;
  Counter* decisions = nullptr;
  Counter* episodes = nullptr;
  Counter* successes = nullptr;
  Counter* faults = nullptr;  // env faults handled (crash, hang, bad output)
  Gauge* success_rate = nullptr;
  Gauge* parked = nullptr;
  Histogram* wait_for_action_ms = nullptr;
  // Env-microseconds spent parked by the gate and waiting for actions: where
  // an env's time goes besides stepping (env_time_*_us in the metrics).
  Counter* parked_us = nullptr;
  Counter* action_wait_us = nullptr;
  StageTimer* env_stage = nullptr;
  // Where each frame's time went (EnvState::phases), per step.
  Histogram *physics_ms = nullptr, *render_ms = nullptr, *readback_ms = nullptr;

  mutable std::mutex mu;
  absl::Status error ABSL_GUARDED_BY(mu);
  std::deque<bool> recent ABSL_GUARDED_BY(mu);  // rolling episode outcomes
  int recent_successes ABSL_GUARDED_BY(mu) = 0;
  std::vector<EpisodeRecord> episode_log ABSL_GUARDED_BY(mu);

  // A failure of the run path; ignored once the worker is stopping (a closed
  // channel or pool is then the expected end).
  void Fail(const absl::Status& s) {
    if (s.ok() || stopping.load(std::memory_order_relaxed)) return;
    std::lock_guard<std::mutex> lock(mu);
    if (error.ok()) error = s;
  }

  void EpisodeEnded(int env, bool success, EnvCursor& c) {
    episodes->Add();
    if (success) successes->Add();
    std::lock_guard<std::mutex> lock(mu);
    episode_log.push_back({c.episode_version, c.episode_start_frame, success,
                           /*late=*/false, env, c.episode_start_env_frame});
    c.episode_fresh = true;
    recent.push_back(success);
    recent_successes += success;
    while (static_cast<int64_t>(recent.size()) > options.success_window) {
      recent_successes -= recent.front();
      recent.pop_front();
    }
    success_rate->Set(double(recent_successes) / recent.size());
  }

  void CopyObservation(int env, RolloutSegment* s, int t) {
    const Observation& o = *pool->state(env).obs;
    for (int k = 0; k < s->shape.num_cameras(); ++k) {
      std::memcpy(s->camera_at(k, t), o.camera(k, s->camera_bytes),
                  s->camera_bytes);
    }
    std::memcpy(s->proprio_at(t), o.proprio, sizeof(float) * kProprioDim);
  }

  void Emit(EnvCursor& c) {
    RolloutSegment* s = c.seg;
    c.seg = nullptr;
    s->index = c.segments++;
    s->enqueue_ns = SteadyNowNs();
    Fail(segments->Push(s));  // blocks while the learner is behind
  }

  bool EnsureSegment(int env, EnvCursor& c) {
    if (c.seg != nullptr) return true;
    c.seg = segments->Acquire();
    if (c.seg == nullptr) return false;  // shutting down
    c.seg->env_id = env;
    c.seg->task = c.task;
    c.seg->run_id = options.run_id;
    return true;
  }

  // The env's observation is ready for a new decision.
  void StartDecision(int env) {
    EnvCursor& c = cursors[env];
    const bool grpo = options.grpo;
    if (!EnsureSegment(env, c)) return;
    // PPO: a full segment goes out, and so does whatever this env's budget
    // of the current version produced once it is spent: the learner's batch
    // must not wait on a segment left open while its env is parked (segments
    // cut at time limits no longer line up with the budget).
    if (!grpo &&
        (c.seg->full() || (c.seg->n > 0 && c.decisions % options.quota == 0))) {
      CopyObservation(env, c.seg, c.seg->n);
      c.seg->has_bootstrap = true;
      Emit(c);
      if (!EnsureSegment(env, c)) return;
    }
    if (grpo && c.seg->full()) {
      // Longer than the segment capacity (the longest episode): cut it as
      // truncated; its return so far stands for the episode.
      c.seg->episode_end = true;
      c.seg->episode_return = c.episode_return;
      c.seg->terminal[c.seg->n - 1] = 1;
      Emit(c);
      if (!EnsureSegment(env, c)) return;
    }
    const bool episode_start = c.seg->n == 0;
    if (!grpo || episode_start) {
      const int64_t unit = grpo ? c.episodes : c.decisions;
      if (!gate->TryAdmit(env, unit)) {
        parked->Set(gate->parked());
        return;  // resumed by OnPolicyVersion
      }
    }
    Submit(env);
  }

  // Parked envs the gate admitted again (parked that long in all).
  void Resume(const std::vector<int>& envs, int64_t parked_ns) {
    for (int env : envs) Submit(env);
    parked_us->Add(static_cast<uint64_t>(parked_ns / 1000));
    parked->Set(gate->parked());
  }

  void Submit(int env) {
    EnvCursor& c = cursors[env];
    RolloutSegment* s = c.seg;
    const int t = s->n;
    if (options.grpo && t == 0) {
      // Unique across workers and their incarnations (run_id), so groups of
      // two processes never merge in the learner.
      s->group =
          Mix(Mix(options.run_id ^ options.seed) +
              static_cast<uint64_t>(env / options.group_size) * 1000003ull +
              static_cast<uint64_t>(c.episodes));
      ++c.episodes;
    }
    ++c.decisions;
    CopyObservation(env, s, t);
    c.slot = t;
    c.chunk_pos = 0;
    c.submit_ns = SteadyNowNs();
    decisions->Add();
    ObservationRequest r{env, c.task, {}, s->proprio_at(t), c.submit_ns};
    for (int k = 0; k < s->shape.num_cameras(); ++k) {
      r.images[k] = s->camera_at(k, t);
    }
    Fail(observations->Submit(r));
  }

  // The init state of episode `round` of `env`'s GRPO group (PPO: of the
  // env itself), in [init_first, init_first + init_count).
  int GroupInit(int env, int64_t round) const {
    const uint64_t g = static_cast<uint64_t>(env / options.group_size);
    return options.init_first +
           static_cast<int>(Mix(options.seed * 7919u + g * 104729u +
                                static_cast<uint64_t>(round)) %
                            static_cast<uint64_t>(options.init_count));
  }
  // Where `env`'s next episode starts: its GRPO group's next state, or
  // (PPO) a fresh draw for the env.
  void ResetToNextInit(int env, EnvCursor& c) {
    RequestReset(env, GroupInit(env, options.grpo ? c.episodes : ++c.resets));
  }
  // PPO, bootstrap_truncation: the episode ran out of time at decision t;
  // the segment ends there with the final observation to bootstrap from.
  void CutAtTimeLimit(int env, EnvCursor& c, int t) {
    RolloutSegment* s = c.seg;
    s->terminal[t] = 0;
    CopyObservation(env, s, s->n);
    s->has_bootstrap = true;
    Emit(c);
  }

  // Level 1 replies: record each decision, send each env its first action.
  absl::Status OnReplies(absl::Span<const ActionReply> replies) {
    const int64_t now = SteadyNowNs();
    const int K = options.chunk;
    const size_t ka = static_cast<size_t>(K) * kActionDim;
    std::vector<int> ids;
    std::vector<float> first;
    ids.reserve(replies.size());
    first.reserve(replies.size() * kActionDim);
    for (const ActionReply& r : replies) {
      EnvCursor& c = cursors[r.env];
      RolloutSegment* s = c.seg;
      const int t = c.slot;
      std::memcpy(s->tokens_at(t), r.tokens, s->taken_row());
      std::memcpy(s->log_probs_at(t), r.log_probs, sizeof(float) * K);
      s->values[t] = r.value;
      s->versions[t] = r.version;
      if (c.episode_fresh) {
        c.episode_fresh = false;
        c.episode_version = r.version;
        c.episode_start_frame = frames->value();
        c.episode_start_env_frame = c.env_frames;
      }
      std::memcpy(c.actions, r.actions, sizeof(float) * ka);
      SkipUnreadImages(r.env, 0);
      ids.push_back(r.env);
      first.insert(first.end(), c.actions, c.actions + kActionDim);
      wait_for_action_ms->Observe((now - c.submit_ns) / 1e6);
      action_wait_us->Add(static_cast<uint64_t>((now - c.submit_ns) / 1000));
    }
    const absl::Status sent = pool->Send(ids, first);
    // A stopped worker's pool is closed: its late replies are dropped.
    return stopping.load(std::memory_order_relaxed) ? absl::OkStatus() : sent;
  }

  // Env pool callback: `env` finished a step or reset.
  void OnReady(int env) {
    const EnvState& st = pool->state(env);
    EnvCursor& c = cursors[env];
    timeline->Record(StageInterval::kEnvStep, st.step_begin_ns, st.step_end_ns);
    env_stage->AddBusy(
        std::chrono::nanoseconds(st.step_end_ns - st.step_begin_ns));
    physics_ms->Observe(st.phases.physics_ms);
    render_ms->Observe(st.phases.render_ms);
    readback_ms->Observe(st.phases.readback_ms);
    if (!st.fault.ok()) {
      HandleFault(env, c);
      return;
    }
    if (c.resetting || c.slot < 0) {  // a reset's or the initial observation
      c.resetting = false;
      StartDecision(env);
      return;
    }
    RolloutSegment* s = c.seg;
    const int t = c.slot;
    bool ended = false;
    if (st.error.ok()) {
      frames->Add();
      ++c.env_frames;
      s->rewards[t] += st.result.reward;
      c.episode_return += st.result.reward;
      ++c.chunk_pos;
      ended = st.result.done || st.result.truncated;
    } else {
      // Rejected action (counted by the pool): end the decision here.
      c.chunk_pos = std::max(c.chunk_pos, 1);
    }
    s->executed[t] = static_cast<uint8_t>(c.chunk_pos);
    if (!ended && st.error.ok() && c.chunk_pos < options.execute_steps) {
      SendAction(env, c.chunk_pos);
      return;
    }
    s->terminal[t] = ended ? 1 : 0;
    s->n = t + 1;
    c.slot = -1;
    if (!ended) {
      StartDecision(env);
      return;
    }
    if (!options.grpo && options.bootstrap_truncation && st.error.ok() &&
        st.result.truncated && !st.result.done && !st.result.unstable) {
      CutAtTimeLimit(env, c, t);
    }
    EpisodeEnded(env, st.result.success, c);
    if (options.grpo) {
      s->episode_end = true;
      s->success = st.result.success;
      s->episode_return = c.episode_return;
      Emit(c);
    }
    c.episode_return = 0;
    ResetToNextInit(env, c);
  }

  // The env crashed, hung or broke its observation contract (the pool has
  // counted and logged it): the decision in flight is dropped and the env
  // reset. PPO keeps the segment's decisions before it, cut with the last
  // good observation as bootstrap; a GRPO episode is worthless without its
  // end, so it goes to the learner empty, which drops its whole group.
  void HandleFault(int env, EnvCursor& c) {
    faults->Add();
    RolloutSegment* s = c.seg;
    if (s != nullptr && c.slot >= 0 && !c.resetting) {
      if (options.grpo) {
        s->n = 0;
        s->episode_end = true;
        Emit(c);
      } else {
        s->n = c.slot;  // slot c.slot holds that decision's (good) observation
        if (s->n > 0) {
          s->has_bootstrap = true;
          Emit(c);
        }
      }
    }
    c.slot = -1;
    c.episode_return = 0;
    c.episode_fresh = true;
    ResetToNextInit(env, c);
  }

  // Resets `env` to `init_id` on its next pool step; its next ready state is
  // the reset observation.
  void RequestReset(int env, int init_id) {
    pool->SetNextReset(env, init_id);
    ResetOnNextSend(env);
  }
  void ResetOnNextSend(int env) {
    cursors[env].resetting = true;
    const float zero[kActionDim] = {};
    const int id = env;
    Fail(pool->Send(absl::MakeConstSpan(&id, 1),
                    absl::MakeConstSpan(zero, kActionDim)));
  }
  // Chunk step k's images are read only if it is the decision's last
  // executed step (the next decision's observation); the pool draws an
  // episode's last step whatever this says.
  void SkipUnreadImages(int env, int k) {
    if (k + 1 < options.execute_steps) pool->SkipImagesOnNextStep(env);
  }
  void SendAction(int env, int k) {
    SkipUnreadImages(env, k);
    const int id = env;
    Fail(pool->Send(absl::MakeConstSpan(&id, 1),
                    absl::MakeConstSpan(cursors[env].actions + k * kActionDim,
                                        kActionDim)));
  }
};

RolloutWorker::RolloutWorker(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}

RolloutWorker::~RolloutWorker() { Stop(); }

absl::StatusOr<std::unique_ptr<RolloutWorker>> RolloutWorker::Create(
    const RolloutWorkerOptions& options, ObservationChannel* observations,
    SegmentChannel* segments, MetricsRegistry* metrics,
    StageTimeline* timeline) {
  if (options.pool.tasks.empty())
    return absl::InvalidArgumentError("rollout worker: no tasks");
  if (options.chunk < 1 || options.chunk > kMaxChunk ||
      options.execute_steps < 1 || options.execute_steps > options.chunk) {
    return absl::InvalidArgumentError(
        "rollout worker: need 1 <= execute_steps <= chunk <= 64");
  }
  auto impl = std::make_unique<Impl>();
  Impl& m = *impl;
  m.options = options;
  if (!options.grpo) m.options.group_size = 1;
  m.num_envs = options.pool.num_envs;
  m.observations = observations;
  m.segments = segments;
  m.timeline = timeline;
  // Parks and resumes reach the channel in the order they happen (a sync
  // barrier in another process counts the envs not parked).
  m.gate = std::make_unique<AdmissionGate>(
      m.num_envs, options.quota, options.max_policy_lag,
      [observations](absl::Span<const int> envs, bool parked) {
        observations->NoteParked(envs, parked);
      });
  MetricsRegistry& r = *metrics;
  m.frames = &r.counter("env_frames");
  m.decisions = &r.counter("decisions");
  m.episodes = &r.counter("episodes");
  m.successes = &r.counter("successes");
  m.faults = &r.counter("env_faults");
  m.success_rate = &r.gauge("success_rate");
  m.parked = &r.gauge("envs_parked");
  auto ms = [] { return Histogram::Exponential(0.01, 1.6, 32); };
  m.wait_for_action_ms = &r.histogram("time_wait_for_action_ms", +ms);
  m.parked_us = &r.counter("env_time_parked_us");
  m.action_wait_us = &r.counter("env_time_action_wait_us");
  m.env_stage = &r.stage("stage_env");
  m.physics_ms = &r.histogram("time_env_physics_ms", +ms);
  m.render_ms = &r.histogram("time_env_render_ms", +ms);
  m.readback_ms = &r.histogram("time_env_readback_ms", +ms);
  m.cursors.resize(static_cast<size_t>(m.num_envs));
  if (options.init_first < 0 || options.init_count < 1) {
    return absl::InvalidArgumentError(
        "rollout worker: need init_first >= 0 and init_count >= 1");
  }
  // A GRPO group's envs run one task (their baseline compares episodes of
  // one scene from one initial state).
  m.options.pool.task_block = m.options.group_size;
  for (int i = 0; i < m.num_envs; ++i) {
    m.cursors[i].task = TaskOfEnv(m.options.pool, i);
  }
  Impl* self = &m;
  observations->SetReplyHandler(
      [self](absl::Span<const ActionReply> r) { return self->OnReplies(r); });
  EnvPoolOptions po = m.options.pool;
  po.on_ready = [self](int env) { self->OnReady(env); };
  absl::StatusOr<std::unique_ptr<EnvPool>> pool = EnvPool::Create(po);
  if (!pool.ok()) return pool.status();
  m.pool = *std::move(pool);
  return std::unique_ptr<RolloutWorker>(new RolloutWorker(std::move(impl)));
}

void RolloutWorker::Start() {
  Impl& m = *impl_;
  // Every env starts from a state of the configured range.
  for (int env = 0; env < m.num_envs; ++env) {
    m.RequestReset(env, m.GroupInit(env, 0));
  }
}

void RolloutWorker::OnPolicyVersion(uint64_t version) {
  Impl& m = *impl_;
  // The gate counts policy versions of this run.
  const uint64_t steps = version - std::min(version, m.options.base_version);
  int64_t parked_ns = 0;
  m.Resume(m.gate->Advance(steps, &parked_ns), parked_ns);
}

void RolloutWorker::OnLearnerStarved(uint64_t incarnation, uint64_t starved) {
  Impl& m = *impl_;
  int64_t parked_ns = 0;
  const std::vector<int> envs =
      m.gate->TopUpIfStarved(incarnation, starved, &parked_ns);
  if (!envs.empty()) {
    spdlog::warn(
        "rollout: the learner was starved ({} time(s)): one more "
        "quota per env; {} parked env(s) resume",
        starved, envs.size());
  }
  m.Resume(envs, parked_ns);
}

int64_t RolloutWorker::top_ups() const {
  return impl_->gate->topped_up_quotas();
}

void RolloutWorker::Stop() {
  impl_->stopping.store(true, std::memory_order_relaxed);
  if (impl_->pool) impl_->pool->Close();
}

absl::Status RolloutWorker::status() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->error;
}

int RolloutWorker::num_threads() const { return impl_->pool->num_threads(); }
int RolloutWorker::parked() const { return impl_->gate->parked(); }
uint64_t RolloutWorker::parks() const { return impl_->gate->parks(); }

double RolloutWorker::RollingSuccess() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->recent.empty()
             ? 0.0
             : double(impl_->recent_successes) / impl_->recent.size();
}

std::vector<EpisodeRecord> RolloutWorker::Episodes() const {
  std::vector<EpisodeRecord> out;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    out = impl_->episode_log;
  }
  // Exact once Stop has returned: the env threads' counts are final.
  const uint64_t max_frames =
      static_cast<uint64_t>(impl_->options.max_episode_steps);
  for (EpisodeRecord& e : out) {
    const uint64_t last = impl_->cursors[static_cast<size_t>(e.env)].env_frames;
    e.late = e.env_start_frame + max_frames > last;
  }
  return out;
}

}  // namespace rlvla3
