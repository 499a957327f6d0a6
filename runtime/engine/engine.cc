#include "runtime/engine/engine.h"

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <deque>
#include <limits>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "envs/task.h"
#include "envs/task_file.h"
#include "policies/tiny_vla_policy.h"
#include "runtime/bounded_queue.h"
#include "runtime/dynamic_batcher.h"
#include "runtime/engine/admission_gate.h"
#include "runtime/engine/trajectory.h"
#include "runtime/engine/weight_store.h"
#include "runtime/supervisor.h"
#include "runtime/thread_priority.h"

namespace rlvla3 {
namespace {

using Clock = std::chrono::steady_clock;

int64_t NowNs() { return Clock::now().time_since_epoch().count(); }

constexpr int kMaxChunk = 64;  // policy.chunk's upper bound in the schema

// What the env side knows about one env between decisions. Touched by one
// thread at a time: the env worker that stepped it, the actor serving its
// request, or the learner releasing it from the gate; the queues between
// them order the accesses.
struct EnvCursor {
  Segment* seg = nullptr;
  int slot = -1;           // decision in flight (slot in seg), -1: none
  int chunk_pos = 0;       // chunk steps executed of the decision in flight
  int64_t decisions = 0;   // decisions submitted (PPO admission unit)
  int64_t episodes = 0;    // episodes admitted (GRPO admission unit)
  int64_t segments = 0;    // segments emitted
  bool resetting = false;  // a reset was requested; next ready is its obs
  float episode_return = 0;
  bool episode_fresh = true;         // no decision of this episode inferred yet
  uint64_t episode_version = 0;      // behaviour version of its first decision
  uint64_t episode_start_frame = 0;  // env frames (all envs) when it began
  uint64_t env_frames = 0;           // this env's own frames so far
  uint64_t episode_start_env_frame = 0;
  int64_t submit_ns = 0;
  int task = 0;
  float actions[kMaxChunk * kActionDim] = {};
};

uint64_t Mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

struct Engine::Impl {
  Config config;
  bool sync = false;
  bool grpo = false;
  int num_envs = 0;
  int chunk = 0;
  int execute = 0;
  int group_size = 1;
  uint64_t base_version = 0;        // of the weights the run started from
  uint64_t max_episode_frames = 0;  // the longest task's step limit
  TextTokenizer tokenizer;
  at::Tensor text, text_len;
  std::unique_ptr<LearnerCore> learner;
  VersionedStore<Policy> weights;
  std::unique_ptr<AdmissionGate> gate;
  std::unique_ptr<SegmentPool> segments;
  std::unique_ptr<BoundedQueue<int>> requests;
  std::unique_ptr<BoundedQueue<Segment*>> trajectories;
  std::vector<EnvCursor> cursors;
  std::unique_ptr<EnvPool> pool;
  std::unique_ptr<Supervisor> supervisor;
  std::atomic<bool>* stop_flag = nullptr;
  EngineHooks hooks;

  // Metrics.
  MetricsRegistry metrics;
  Counter* frames = nullptr;
  Counter* decisions = nullptr;
  Counter* episodes = nullptr;
  Counter* successes = nullptr;
  Counter* trained = nullptr;
  Counter* steps = nullptr;
  Counter* skipped = nullptr;
  Counter* dropped = nullptr;
  Gauge* lag_mean = nullptr;
  Gauge* lag_max = nullptr;
  Gauge* success_rate = nullptr;
  Gauge* s_per_step = nullptr;
  Gauge* version = nullptr;
  Gauge* request_depth = nullptr;
  Gauge* trajectory_depth = nullptr;
  Gauge* parked = nullptr;
  Gauge* clip_fraction = nullptr;
  Gauge* approx_kl = nullptr;
  Gauge* step_kl = nullptr;        // KL of the step itself (target_kl > 0)
  Gauge* learning_rate = nullptr;  // the weights' rate after the step
  Gauge* is_min = nullptr;
  Gauge* is_mean = nullptr;
  Gauge* is_max = nullptr;
  Gauge* loss = nullptr;
  Gauge* entropy = nullptr;
  Gauge* policy_loss = nullptr;
  Gauge* value_loss = nullptr;
  Gauge* grad_norm = nullptr;
  Gauge* ratio_min = nullptr;  // pi_theta / pi_prox over the update
  Gauge* ratio_mean = nullptr;
  Gauge* ratio_max = nullptr;
  // Per PPO epoch: clip_fraction.epoch_<k>, approx_kl.epoch_<k> (KL(prox ||
  // theta), k3 estimator).
  std::vector<Gauge*> epoch_clip, epoch_kl;
  Histogram* batch_size = nullptr;
  Histogram* wait_for_action_ms = nullptr;
  Histogram* request_dwell_ms = nullptr;
  Histogram* trajectory_dwell_ms = nullptr;
  Histogram* inference_ms = nullptr;
  Histogram* update_ms = nullptr;
  Histogram* publish_ms = nullptr;
  StageTimer* env_stage = nullptr;
  StageTimer* inference_stage = nullptr;
  StageTimer* learner_stage = nullptr;

  mutable absl::Mutex mu;
  std::deque<bool> recent ABSL_GUARDED_BY(mu);  // rolling episode outcomes
  int recent_successes ABSL_GUARDED_BY(mu) = 0;
  std::vector<StageInterval> timeline ABSL_GUARDED_BY(mu);
  std::vector<LearningPoint> curve ABSL_GUARDED_BY(mu);
  std::vector<int64_t> lag_hist ABSL_GUARDED_BY(mu);
  LearnerStepStats last_step ABSL_GUARDED_BY(mu);
  double start_s = 0, end_s = 0;

  std::vector<Engine::EpisodeRecord> episode_log ABSL_GUARDED_BY(mu);

  void Record(StageInterval::Stage s, int64_t b, int64_t e) {
    if (!config.rl.timeline) return;
    absl::MutexLock lock(&mu);
    timeline.push_back({s, b, e});
  }

  double RollingSuccess() const {
    absl::MutexLock lock(&mu);
    return recent.empty() ? 0.0 : double(recent_successes) / recent.size();
  }

  void EpisodeEnded(int env, bool success, EnvCursor& c) {
    episodes->Add();
    if (success) successes->Add();
    absl::MutexLock lock(&mu);
    episode_log.push_back({c.episode_version, c.episode_start_frame, success,
                           /*late=*/false, env, c.episode_start_env_frame});
    c.episode_fresh = true;
    recent.push_back(success);
    recent_successes += success;
    while (static_cast<int64_t>(recent.size()) > config.rl.success_window) {
      recent_successes -= recent.front();
      recent.pop_front();
    }
    success_rate->Set(double(recent_successes) / recent.size());
  }

  // ---- env side (level 1 producer, level 2 producer) -----------------------

  void CopyObservation(int env, Segment* s, int t) {
    const Observation& o = *pool->state(env).obs;
    std::memcpy(s->agentview_at(t), o.agentview.data(), s->image_bytes);
    std::memcpy(s->wrist_at(t), o.wrist.data(), s->image_bytes);
    std::memcpy(s->proprio_at(t), o.proprio, sizeof(float) * kProprioDim);
  }

  void Emit(EnvCursor& c) {
    Segment* s = c.seg;
    c.seg = nullptr;
    s->index = c.segments++;
    s->enqueue_ns = NowNs();
    trajectories->Push(s);  // blocks while the learner is behind
  }

  bool EnsureSegment(int env, EnvCursor& c) {
    if (c.seg != nullptr) return true;
    c.seg = segments->Acquire();
    if (c.seg == nullptr) return false;  // shutting down
    c.seg->env_id = env;
    c.seg->task = c.task;
    return true;
  }

  // The env's observation is ready for a new decision.
  void StartDecision(int env) {
    EnvCursor& c = cursors[env];
    if (!EnsureSegment(env, c)) return;
    if (!grpo && c.seg->full()) {
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
        return;  // resumed by Advance on the learner thread
      }
    }
    Submit(env);
  }

  void Submit(int env) {
    EnvCursor& c = cursors[env];
    Segment* s = c.seg;
    const int t = s->n;
    if (grpo && t == 0) {
      s->group = static_cast<uint64_t>(env / group_size) * 1000003ull +
                 static_cast<uint64_t>(c.episodes);
      ++c.episodes;
    }
    ++c.decisions;
    CopyObservation(env, s, t);
    c.slot = t;
    c.chunk_pos = 0;
    c.submit_ns = NowNs();
    decisions->Add();
    requests->Push(env);
  }

  // The init state of episode `round` of `env`'s GRPO group.
  int GroupInit(int env, int64_t round) const {
    const uint64_t g = static_cast<uint64_t>(env / group_size);
    return static_cast<int>(Mix(static_cast<uint64_t>(config.run.seed) * 7919u +
                                g * 104729u + static_cast<uint64_t>(round)) %
                            kInitStatesPerTask);
  }

  // Env pool callback: `env` finished a step or reset.
  void OnReady(int env) {
    const EnvState& st = pool->state(env);
    EnvCursor& c = cursors[env];
    Record(StageInterval::kEnvStep, st.step_begin_ns, st.step_end_ns);
    env_stage->AddBusy(
        std::chrono::nanoseconds(st.step_end_ns - st.step_begin_ns));
    if (c.resetting) {
      c.resetting = false;
      StartDecision(env);
      return;
    }
    if (c.slot < 0) {  // the initial observation
      StartDecision(env);
      return;
    }
    Segment* s = c.seg;
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
    if (!ended && st.error.ok() && c.chunk_pos < execute) {
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
    EpisodeEnded(env, st.result.success, c);
    if (grpo) {
      s->episode_end = true;
      s->success = st.result.success;
      s->episode_return = c.episode_return;
      Emit(c);
    }
    c.episode_return = 0;
    if (grpo) {
      RequestReset(env, GroupInit(env, c.episodes));
    } else {
      ResetOnNextSend(env);  // the pool's auto-reset
    }
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
    pool->Send(absl::MakeConstSpan(&id, 1),
               absl::MakeConstSpan(zero, kActionDim))
        .IgnoreError();  // fails only when the pool is closing
  }

  void SendAction(int env, int k) {
    const int id = env;
    pool->Send(absl::MakeConstSpan(&id, 1),
               absl::MakeConstSpan(cursors[env].actions + k * kActionDim,
                                   kActionDim))
        .IgnoreError();
  }

  // ---- inference actors (level 1 consumer, level 3 reader) -----------------

  absl::Status Infer(const std::vector<int>& batch,
                     std::shared_ptr<Policy>& policy, uint64_t& have_version) {
    const int64_t t0 = NowNs();
    if (weights.version() != have_version || policy == nullptr) {
      VersionedStore<Policy>::Entry e = weights.Latest();
      policy = e.value;
      have_version = e.version;
    }
    const int64_t B = static_cast<int64_t>(batch.size());
    std::vector<Segment*> gather_segs;
    std::vector<int> gather_slots;
    for (int env : batch) {
      const EnvCursor& c = cursors[env];
      request_dwell_ms->Observe((t0 - c.submit_ns) / 1e6);
      gather_segs.push_back(c.seg);
      gather_slots.push_back(c.slot);
    }
    PolicyInput in =
        GatherFromSegments(gather_segs, gather_slots, text, text_len, nullptr);
    ActResult r = policy->Act(in, /*greedy=*/false);
    // One device-to-host copy per batch (a no-op on CPU).
    const at::Tensor tokens =
        r.tokens.to(torch::kCPU, torch::kByte).contiguous();
    const at::Tensor logp = r.log_probs.to(torch::kCPU).contiguous();
    const at::Tensor values = r.values.to(torch::kCPU).contiguous();
    const at::Tensor actions = r.actions.to(torch::kCPU).contiguous();
    const int64_t ka = static_cast<int64_t>(chunk) * kActionDim;
    std::vector<float> first(static_cast<size_t>(B) * kActionDim);
    const int64_t t1 = NowNs();
    for (int64_t b = 0; b < B; ++b) {
      EnvCursor& c = cursors[batch[b]];
      Segment* s = c.seg;
      const int t = c.slot;
      std::memcpy(s->tokens_at(t), tokens.data_ptr<uint8_t>() + b * ka, ka);
      std::memcpy(s->log_probs_at(t), logp.data_ptr<float>() + b * chunk,
                  sizeof(float) * chunk);
      s->values[t] = values.data_ptr<float>()[b];
      s->versions[t] = r.version;
      if (c.episode_fresh) {
        c.episode_fresh = false;
        c.episode_version = r.version;
        c.episode_start_frame = frames->value();
        c.episode_start_env_frame = c.env_frames;
      }
      std::memcpy(c.actions, actions.data_ptr<float>() + b * ka,
                  sizeof(float) * ka);
      std::memcpy(first.data() + b * kActionDim, c.actions,
                  sizeof(float) * kActionDim);
      wait_for_action_ms->Observe((t1 - c.submit_ns) / 1e6);
    }
    inference_ms->Observe((t1 - t0) / 1e6);
    batch_size->Observe(static_cast<double>(B));
    Record(StageInterval::kInference, t0, t1);
    inference_stage->AddBusy(std::chrono::nanoseconds(t1 - t0));
    return pool->Send(batch, first);
  }

  absl::Status ActorLoop(int actor) {
    std::shared_ptr<Policy> policy;
    uint64_t have_version = ~0ull;
    std::vector<int> batch;
    if (!sync) {
      DynamicBatcher<int> batcher(requests.get(), config.batcher.ToOptions());
      for (;;) {
        const int64_t w0 = NowNs();
        const QueueStatus s = batcher.NextBatch(batch);
        inference_stage->AddIdle(std::chrono::nanoseconds(NowNs() - w0));
        if (s == QueueStatus::kClosed) return absl::OkStatus();
        if (batch.empty()) continue;
        if (absl::Status st = Infer(batch, policy, have_version); !st.ok()) {
          return supervisor->stopping() ? absl::OkStatus() : st;
        }
      }
    }
    // Sync: one batch of every env that is not parked at the barrier.
    if (actor > 0) return absl::OkStatus();
    std::vector<int> buf(static_cast<size_t>(num_envs));
    for (;;) {
      size_t n = 0;
      const int64_t w0 = NowNs();
      const QueueStatus s = requests->PopBulk(
          buf.data(), buf.size() - batch.size(), absl::Milliseconds(20), &n);
      inference_stage->AddIdle(std::chrono::nanoseconds(NowNs() - w0));
      if (s == QueueStatus::kClosed) return absl::OkStatus();
      batch.insert(batch.end(), buf.begin(), buf.begin() + n);
      if (batch.empty() ||
          static_cast<int>(batch.size()) + gate->parked() < num_envs) {
        continue;
      }
      if (absl::Status st = Infer(batch, policy, have_version); !st.ok()) {
        return supervisor->stopping() ? absl::OkStatus() : st;
      }
      batch.clear();
    }
  }

  // ---- learner (level 2 consumer, level 3 publisher) -----------------------

  void Publish() {
    const int64_t t0 = NowNs();
    weights.Publish(learner->MakeSnapshot(), learner->version());
    const int64_t t1 = NowNs();
    publish_ms->Observe((t1 - t0) / 1e6);
    Record(StageInterval::kWeightPublish, t0, t1);
    // The gate counts optimizer steps of this run.
    for (int env : gate->Advance(learner->version() - base_version))
      Submit(env);
    parked->Set(gate->parked());
  }

  void ReleaseConsumed() {
    for (Segment* s : learner->TakeConsumed()) segments->Release(s);
  }

  absl::Status LearnerLoop() {
    if (config.threads.learner_nice > 0) {
      const absl::Status nice =
          SetCurrentThreadNice(static_cast<int>(config.threads.learner_nice));
      if (!nice.ok()) spdlog::warn("learner: {}", nice.ToString());
    }
    const int64_t global_units = learner->global_units();
    std::vector<Segment*> buf(64);
    int64_t last_step_ns = NowNs();
    for (;;) {
      // Wait for segments (learner idle time).
      size_t n = 0;
      const int64_t w0 = NowNs();
      const QueueStatus s = trajectories->PopBulk(buf.data(), buf.size(),
                                                  absl::Milliseconds(20), &n);
      learner_stage->AddIdle(std::chrono::nanoseconds(NowNs() - w0));
      if (s == QueueStatus::kClosed && n == 0) return absl::OkStatus();
      if (n > 0) {
        const int64_t now = NowNs();
        std::vector<Segment*> got(buf.begin(), buf.begin() + n);
        for (Segment* seg : got)
          trajectory_dwell_ms->Observe((now - seg->enqueue_ns) / 1e6);
        const int64_t d0 = learner->dropped_samples();
        learner->Add(got);
        dropped->Add(static_cast<uint64_t>(learner->dropped_samples() - d0));
      }
      // Sync: the whole rollout first, then train.
      if (sync && learner->ready_units() < global_units) {
        ReleaseConsumed();
        continue;
      }
      while (sync ? learner->CanTrain() : learner->ShouldTrain()) {
        const int64_t t0 = NowNs();
        learner->TrainMicroBatch();
        const int64_t t1 = NowNs();
        learner_stage->AddBusy(std::chrono::nanoseconds(t1 - t0));
        Record(StageInterval::kLearnerUpdate, t0, t1);
        if (!learner->ReadyToStep()) continue;
        const int64_t u0 = NowNs();
        LearnerStepStats st = learner->Step();
        const int64_t u1 = NowNs();
        learner_stage->AddBusy(std::chrono::nanoseconds(u1 - u0));
        Record(StageInterval::kLearnerUpdate, u0, u1);
        update_ms->Observe((u1 - u0) / 1e6);
        trained->Add(static_cast<uint64_t>(st.samples));
        if (st.skipped) {
          skipped->Add();
        } else {
          steps->Add();
        }
        s_per_step->Set((u1 - last_step_ns) / 1e9);
        last_step_ns = u1;
        version->Set(static_cast<double>(st.version));
        lag_mean->Set(st.lag_mean);
        lag_max->Set(st.lag_max);
        clip_fraction->Set(st.clip_fraction);
        approx_kl->Set(st.approx_kl);
        step_kl->Set(st.step_kl);
        learning_rate->Set(st.lr);
        is_min->Set(st.is_weight_min);
        is_mean->Set(st.is_weight_mean);
        is_max->Set(st.is_weight_max);
        loss->Set(st.loss);
        entropy->Set(st.entropy);
        policy_loss->Set(st.policy_loss);
        value_loss->Set(st.value_loss);
        grad_norm->Set(st.grad_norm);
        ratio_min->Set(st.ratio_min);
        ratio_mean->Set(st.ratio_mean);
        ratio_max->Set(st.ratio_max);
        for (size_t k = 0;
             k < st.epoch_clip_fraction.size() && k < epoch_clip.size(); ++k) {
          epoch_clip[k]->Set(st.epoch_clip_fraction[k]);
          epoch_kl[k]->Set(st.epoch_approx_kl[k]);
        }
        {
          absl::MutexLock lock(&mu);
          last_step = st;
          lag_hist = learner->lag_histogram();
          curve.push_back(
              {static_cast<int64_t>(trained->value()), st.version,
               recent.empty() ? 0.0 : double(recent_successes) / recent.size(),
               episodes->value()});
        }
        if (hooks.on_step) hooks.on_step(st);
        Publish();
        if (config.rl.max_steps > 0 &&
            static_cast<int64_t>(steps->value()) >= config.rl.max_steps) {
          stop_flag->store(true, std::memory_order_relaxed);
        }
      }
      ReleaseConsumed();
    }
  }

  void StopAll() {
    requests->Close();
    trajectories->Close();
    segments->Close();
  }
};

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Engine::~Engine() {
  if (impl_->pool) impl_->pool->Close();
}

absl::StatusOr<std::unique_ptr<Engine>> Engine::Create(const Config& config,
                                                       EngineParts parts) {
  auto impl = std::make_unique<Impl>();
  Impl& m = *impl;
  m.config = config;
  m.sync = config.run.mode == "sync";
  m.grpo = config.rl.algorithm == "grpo";
  m.num_envs = static_cast<int>(config.env.num_envs);
  m.chunk = static_cast<int>(parts.net->options().chunk());
  m.execute =
      static_cast<int>(std::min<int64_t>(config.rl.execute_steps, m.chunk));
  if (config.rl.execute_steps > m.chunk) {
    spdlog::warn(
        "engine: rl.execute_steps {} exceeds the policy's chunk {}; executing "
        "{}",
        config.rl.execute_steps, m.chunk, m.chunk);
  }
  m.group_size = m.grpo ? static_cast<int>(config.rl.grpo_group_size) : 1;
  m.tokenizer = parts.tokenizer;
  if (config.run.mode != "sync" && config.run.mode != "async") {
    return absl::InvalidArgumentError(
        absl::StrCat("engine: unknown mode ", config.run.mode));
  }
  if (parts.pool.tasks.empty())
    return absl::InvalidArgumentError("engine: no tasks");
  if (config.queues.trajectory.overflow != "block") {
    return absl::InvalidArgumentError(
        "engine: queues.trajectory.overflow must be \"block\" (segments are "
        "never dropped silently; staleness drops are the learner's)");
  }
  // Instruction table, one row per task of the pool.
  std::vector<std::string> instructions;
  int max_steps = 0;
  for (const auto& name : parts.pool.tasks) {
    absl::StatusOr<TaskSpec> spec = ResolveTask(name);
    if (!spec.ok()) return spec.status();
    instructions.push_back(spec->instruction);
    max_steps = std::max(max_steps, spec->max_steps);
  }
  m.max_episode_frames = static_cast<uint64_t>(max_steps);
  EncodeInstructionTable(instructions, m.tokenizer,
                         parts.net->options().max_text_len(), &m.text,
                         &m.text_len);

  // Queues and segment storage.
  const int lag = static_cast<int>(m.sync ? 0 : config.rl.max_policy_lag);
  m.requests = std::make_unique<BoundedQueue<int>>(QueueOptions{
      std::max<size_t>(static_cast<size_t>(m.num_envs),
                       static_cast<size_t>(config.queues.request.capacity)),
      OverflowPolicy::kBlock,
      static_cast<size_t>(config.threads.env_workers) + 4,
      static_cast<int>(config.queues.request.spin_before_sleep)});
  m.trajectories = std::make_unique<BoundedQueue<Segment*>>(
      config.queues.trajectory.ToOptions());
  SegmentShape shape;
  shape.width = static_cast<int>(config.env.image_width);
  shape.height = static_cast<int>(config.env.image_height);
  shape.chunk = m.chunk;
  shape.action_dim = kActionDim;
  shape.proprio_dim = kProprioDim;
  shape.capacity = m.grpo ? (max_steps + m.execute - 1) / m.execute + 1
                          : static_cast<int>(config.rl.rollout_len);
  // Per env: one open segment, up to (lag + 1) x rollouts_per_step in
  // flight to the learner, one being released; plus what the trajectory
  // queue holds.
  const int rollouts = static_cast<int>(config.rl.rollouts_per_step);
  const int count = m.num_envs * ((lag + 1) * rollouts + 2) +
                    static_cast<int>(config.queues.trajectory.capacity) + 2;
  m.segments = std::make_unique<SegmentPool>(shape, count);
  const int64_t quota =
      config.rl.rollouts_per_step * (m.grpo ? 1 : config.rl.rollout_len);
  m.gate = std::make_unique<AdmissionGate>(m.num_envs, quota, lag);

  // Learner.
  LearnerOptions lo = LearnerOptionsFromConfig(config.rl);
  lo.global_units = m.num_envs * quota;
  lo.max_policy_lag = lag;
  lo.grpo_group_size = m.group_size;
  lo.shuffle_seed = static_cast<uint64_t>(config.run.seed);
  m.learner = std::make_unique<LearnerCore>(parts.net, m.text, m.text_len, lo,
                                            parts.version);
  m.weights.Publish(m.learner->MakeSnapshot(), parts.version);
  m.base_version = parts.version;

  // Metrics.
  MetricsRegistry& r = m.metrics;
  m.frames = &r.counter("env_frames");
  m.decisions = &r.counter("decisions");
  m.episodes = &r.counter("episodes");
  m.successes = &r.counter("successes");
  m.trained = &r.counter("trained_samples");
  m.steps = &r.counter("optimizer_steps");
  m.skipped = &r.counter("skipped_steps");
  m.dropped = &r.counter("dropped_samples");
  m.lag_mean = &r.gauge("policy_lag_mean");
  m.lag_max = &r.gauge("policy_lag_max");
  m.success_rate = &r.gauge("success_rate");
  m.s_per_step = &r.gauge("s_per_step");
  m.version = &r.gauge("policy_version");
  m.request_depth = &r.gauge("queue_request_depth");
  m.trajectory_depth = &r.gauge("queue_trajectory_depth");
  m.parked = &r.gauge("envs_parked");
  m.clip_fraction = &r.gauge("clip_fraction");
  m.approx_kl = &r.gauge("approx_kl");
  m.step_kl = &r.gauge("step_kl");
  m.learning_rate = &r.gauge("lr");
  m.is_min = &r.gauge("is_weight_min");
  m.is_mean = &r.gauge("is_weight_mean");
  m.is_max = &r.gauge("is_weight_max");
  m.loss = &r.gauge("loss");
  m.entropy = &r.gauge("entropy");
  m.policy_loss = &r.gauge("policy_loss");
  m.value_loss = &r.gauge("value_loss");
  m.grad_norm = &r.gauge("grad_norm");
  m.ratio_min = &r.gauge("ratio_min");
  m.ratio_mean = &r.gauge("ratio_mean");
  m.ratio_max = &r.gauge("ratio_max");
  for (int64_t k = 1; k <= config.rl.ppo_epochs; ++k) {
    m.epoch_clip.push_back(&r.gauge(absl::StrCat("clip_fraction.epoch_", k)));
    m.epoch_kl.push_back(&r.gauge(absl::StrCat("approx_kl.epoch_", k)));
  }
  m.batch_size = &r.histogram(
      "inference_batch_size",
      std::vector<double>{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024});
  auto ms = [] { return Histogram::Exponential(0.01, 1.6, 32); };
  m.wait_for_action_ms = &r.histogram("time_wait_for_action_ms", +ms);
  m.request_dwell_ms = &r.histogram("time_request_queue_dwell_ms", +ms);
  m.trajectory_dwell_ms = &r.histogram("time_trajectory_queue_dwell_ms", +ms);
  m.inference_ms = &r.histogram("time_inference_ms", +ms);
  m.update_ms = &r.histogram("time_update_ms", +ms);
  m.publish_ms = &r.histogram("time_weight_publish_ms", +ms);
  m.env_stage = &r.stage("stage_env");
  m.inference_stage = &r.stage("stage_inference");
  m.learner_stage = &r.stage("stage_learner");

  // Env pool: ready envs come to OnReady.
  m.cursors.resize(static_cast<size_t>(m.num_envs));
  for (int i = 0; i < m.num_envs; ++i) {
    m.cursors[i].task = i % static_cast<int>(parts.pool.tasks.size());
  }
  EnvPoolOptions po = parts.pool;
  po.num_envs = m.num_envs;
  Impl* self = &m;
  po.on_ready = [self](int env) { self->OnReady(env); };
  absl::StatusOr<std::unique_ptr<EnvPool>> pool = EnvPool::Create(po);
  if (!pool.ok()) return pool.status();
  m.pool = *std::move(pool);
  return std::unique_ptr<Engine>(new Engine(std::move(impl)));
}

absl::Status Engine::Run(const EngineHooks& hooks) {
  Impl& m = *impl_;
  m.hooks = hooks;
  m.stop_flag = &stop_requested_;
  m.supervisor = std::make_unique<Supervisor>([&m] { m.StopAll(); });
  const auto t0 = Clock::now();
  m.metrics.Snapshot();  // rates start now
  spdlog::info(
      "engine: {} mode, {}, {} envs on {} worker threads, {} inference "
      "actor(s), global batch {} {}, micro-batch {}, max policy lag {}",
      m.sync ? "sync" : "async", m.config.rl.algorithm, m.num_envs,
      m.pool->num_threads(), m.config.threads.inference_actors,
      m.grpo ? m.num_envs : m.num_envs * m.config.rl.rollout_len,
      m.grpo ? "episodes" : "samples", m.config.rl.micro_batch,
      m.sync ? 0 : m.config.rl.max_policy_lag);
  for (int a = 0; a < m.config.threads.inference_actors; ++a) {
    m.supervisor->Spawn(absl::StrCat("inference-actor-", a),
                        [&m, a] { return m.ActorLoop(a); });
  }
  m.supervisor->Spawn("learner", [&m] { return m.LearnerLoop(); });
  // GRPO: every env starts from its group's first initial state.
  for (int env = 0; env < m.num_envs; ++env) {
    if (m.grpo) {
      m.RequestReset(env, m.GroupInit(env, 0));
    } else {
      m.StartDecision(env);
    }
  }
  const absl::Duration interval = absl::Seconds(m.config.metrics.interval_s);
  auto next = Clock::now();
  for (;;) {
    next += std::chrono::microseconds(absl::ToInt64Microseconds(interval));
    while (Clock::now() < next && !m.supervisor->stopping() &&
           !stop_requested_.load(std::memory_order_relaxed)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    m.request_depth->Set(static_cast<double>(m.requests->depth()));
    m.trajectory_depth->Set(static_cast<double>(m.trajectories->depth()));
    m.parked->Set(m.gate->parked());
    if (hooks.on_interval) hooks.on_interval(m.metrics.Snapshot());
    const double elapsed =
        std::chrono::duration<double>(Clock::now() - t0).count();
    if (m.supervisor->stopping() || stop_requested_.load() ||
        elapsed >= m.config.rl.duration_s) {
      break;
    }
  }
  m.end_s = std::chrono::duration<double>(Clock::now() - t0).count();
  // Stop: close the queues (stages blocked on them return), then the env
  // pool (no more callbacks), then wait for every stage.
  m.supervisor->RequestStop();
  m.pool->Close();
  absl::Status s = m.supervisor->Wait();
  return s;
}

EngineSummary Engine::Summary() const {
  const Impl& m = *impl_;
  EngineSummary s;
  s.mode = m.sync ? "sync" : "async";
  s.wall_s = m.end_s;
  s.env_frames = m.frames->value();
  s.decisions = m.decisions->value();
  s.episodes = m.episodes->value();
  s.successes = m.successes->value();
  s.trained_samples = static_cast<int64_t>(m.trained->value());
  s.optimizer_steps = static_cast<int64_t>(m.steps->value());
  s.skipped_steps = static_cast<int64_t>(m.skipped->value());
  s.dropped_samples = static_cast<int64_t>(m.dropped->value());
  s.parks = m.gate->parks();
  const double wall = std::max(1e-9, m.end_s);
  s.env_frames_per_s = s.env_frames / wall;
  s.trained_samples_per_s = s.trained_samples / wall;
  s.s_per_step = s.optimizer_steps > 0 ? wall / s.optimizer_steps : 0;
  {
    absl::MutexLock lock(&m.mu);
    int64_t n = 0;
    double sum = 0;
    for (size_t i = 0; i < m.lag_hist.size(); ++i) {
      n += m.lag_hist[i];
      sum += static_cast<double>(i) * m.lag_hist[i];
      if (m.lag_hist[i] > 0) s.lag_max = static_cast<double>(i);
    }
    s.lag_mean = n > 0 ? sum / n : 0;
  }
  s.inference_batch_mean = m.batch_size->Snapshot().mean();
  auto pct = [wall](const StageTimer* t) {
    return 100.0 * t->busy_ns() / 1e9 / wall;
  };
  s.busy_env = pct(m.env_stage) / std::max(1, m.pool->num_threads());
  s.busy_inference =
      pct(m.inference_stage) /
      std::max<int64_t>(1, m.sync ? 1 : m.config.threads.inference_actors);
  s.busy_learner = pct(m.learner_stage);
  s.cpu_s_env = m.env_stage->busy_ns() / 1e9;
  s.cpu_s_inference = m.inference_stage->busy_ns() / 1e9;
  s.cpu_s_learner = m.learner_stage->busy_ns() / 1e9;
  s.rolling_success = m.RollingSuccess();
  s.version = m.learner->version();
  return s;
}

MetricsRegistry& Engine::metrics() { return impl_->metrics; }

std::vector<StageInterval> Engine::Timeline() const {
  absl::MutexLock lock(&impl_->mu);
  return impl_->timeline;
}

std::vector<Engine::LearningPoint> Engine::LearningCurve() const {
  absl::MutexLock lock(&impl_->mu);
  return impl_->curve;
}

std::vector<Engine::EpisodeRecord> Engine::Episodes() const {
  std::vector<EpisodeRecord> out;
  {
    absl::MutexLock lock(&impl_->mu);
    out = impl_->episode_log;
  }
  // The env threads have stopped once Run returned: their counts are final.
  for (EpisodeRecord& e : out) {
    const uint64_t last = impl_->cursors[static_cast<size_t>(e.env)].env_frames;
    e.late = e.env_start_frame + impl_->max_episode_frames > last;
  }
  return out;
}

std::vector<int64_t> Engine::LagHistogram() const {
  absl::MutexLock lock(&impl_->mu);
  return impl_->lag_hist;
}

TinyVLA& Engine::net() { return impl_->learner->net(); }

const TextTokenizer& Engine::tokenizer() const { return impl_->tokenizer; }

std::vector<SuccessBucket> SuccessByStartVersion(
    const std::vector<Engine::EpisodeRecord>& episodes, int buckets) {
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
