#include "services/learner/learner.h"

#include <spdlog/spdlog.h>

#include <chrono>

#include "absl/strings/str_cat.h"
#include "runtime/steady_clock.h"
#include "runtime/thread_priority.h"
#include "runtime/torch_status.h"

namespace rlvla3 {
namespace {}  // namespace

struct Learner::Metrics {
  Counter* trained = nullptr;
  Counter* steps = nullptr;
  Counter* skipped = nullptr;
  Counter* dropped = nullptr;
  Counter* expired = nullptr;   // GRPO episodes of groups that never completed
  Counter* lost = nullptr;      // samples of versions a killed learner lost
  Counter* aged_out = nullptr;  // of dropped: waited past the lag bound here
  // The core's totals as last counted (CountIntake adds what they grew by).
  int64_t dropped_seen = 0, expired_seen = 0, lost_seen = 0, aged_out_seen = 0;
  Gauge *lag_mean, *lag_max, *s_per_step, *version, *clip_fraction, *approx_kl,
      *step_kl, *learning_rate, *is_min, *is_mean, *is_max, *loss, *entropy,
      *policy_loss, *value_loss, *grad_norm, *ratio_min, *ratio_mean,
      *ratio_max, *grpo_informative, *token_kl, *update_steps, *ref_kl;
  Counter* kl_stops = nullptr;     // updates ended by rl.kl_stop
  Counter* refills = nullptr;      // global batches carried over (GRPO refill)
  Counter* grpo_groups = nullptr;  // GRPO groups completed
  Counter* starved = nullptr;      // see Learner::starved
  // Per PPO epoch: clip_fraction.epoch_<k>, approx_kl.epoch_<k> (KL(prox ||
  // theta), k3 estimator).
  std::vector<Gauge*> epoch_clip, epoch_kl;
  Histogram* trajectory_dwell_ms = nullptr;
  Histogram* update_ms = nullptr;
  Histogram* publish_ms = nullptr;
  StageTimer* stage = nullptr;

  Metrics(MetricsRegistry& r, int epochs) {
    trained = &r.counter("trained_samples");
    steps = &r.counter("optimizer_steps");
    skipped = &r.counter("skipped_steps");
    dropped = &r.counter("dropped_samples");
    expired = &r.counter("expired_episodes");
    lost = &r.counter("lost_version_samples");
    aged_out = &r.counter("aged_out_samples");
    lag_mean = &r.gauge("policy_lag_mean");
    lag_max = &r.gauge("policy_lag_max");
    s_per_step = &r.gauge("s_per_step");
    version = &r.gauge("policy_version");
    clip_fraction = &r.gauge("clip_fraction");
    approx_kl = &r.gauge("approx_kl");
    step_kl = &r.gauge("step_kl");
    learning_rate = &r.gauge("lr");
    is_min = &r.gauge("is_weight_min");
    is_mean = &r.gauge("is_weight_mean");
    is_max = &r.gauge("is_weight_max");
    loss = &r.gauge("loss");
    entropy = &r.gauge("entropy");
    policy_loss = &r.gauge("policy_loss");
    value_loss = &r.gauge("value_loss");
    grad_norm = &r.gauge("grad_norm");
    ratio_min = &r.gauge("ratio_min");
    ratio_mean = &r.gauge("ratio_mean");
    ratio_max = &r.gauge("ratio_max");
    // GRPO: the fraction of the last update's groups whose returns differed.
    grpo_informative = &r.gauge("grpo_informative_fraction");
    grpo_groups = &r.counter("grpo_groups");
    // KL(prox || theta) per action token over the update, its AdamW steps,
    // and the updates rl.kl_stop ended early.
    token_kl = &r.gauge("token_kl");
    update_steps = &r.gauge("update_adam_steps");
    ref_kl = &r.gauge("ref_kl");  // KL(current || start) per token
    kl_stops = &r.counter("kl_stops");
    refills = &r.counter("refills");
    starved = &r.counter("learner_starved");
    for (int k = 1; k <= epochs; ++k) {
      epoch_clip.push_back(&r.gauge(absl::StrCat("clip_fraction.epoch_", k)));
      epoch_kl.push_back(&r.gauge(absl::StrCat("approx_kl.epoch_", k)));
    }
    auto ms = [] { return Histogram::Exponential(0.01, 1.6, 32); };
    trajectory_dwell_ms = &r.histogram("time_trajectory_queue_dwell_ms", +ms);
    update_ms = &r.histogram("time_update_ms", +ms);
    publish_ms = &r.histogram("time_weight_publish_ms", +ms);
    stage = &r.stage("stage_learner");
  }

  void Set(const LearnerStepStats& st) {
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
    token_kl->Set(st.token_kl);
    ref_kl->Set(st.ref_kl);
    update_steps->Set(st.optimizer_steps);
    if (st.kl_stopped) kl_stops->Add();
    if (st.deferred) refills->Add();
    if (st.groups > 0) {
      grpo_groups->Add(static_cast<uint64_t>(st.groups));
      grpo_informative->Set(static_cast<double>(st.informative_groups) /
                            static_cast<double>(st.groups));
    }
    for (size_t k = 0;
         k < st.epoch_clip_fraction.size() && k < epoch_clip.size(); ++k) {
      epoch_clip[k]->Set(st.epoch_clip_fraction[k]);
      epoch_kl[k]->Set(st.epoch_approx_kl[k]);
    }
  }
};

Learner::Learner(std::shared_ptr<TrainablePolicy> policy,
                 const LearnerRoleOptions& options, uint64_t version,
                 SegmentSource* segments, WeightChannel<Policy>* weights,
                 MetricsRegistry* metrics, StageTimeline* timeline)
    : options_(options),
      segments_(segments),
      weights_(weights),
      timeline_(timeline),
      m_(std::make_unique<Metrics>(*metrics, options.core.ppo_epochs)) {
  core_ = std::make_unique<LearnerCore>(std::move(policy), options.text,
                                        options.text_len, options.core, version,
                                        options.reducer);
  publishes_ = options.reducer == nullptr || options.reducer->rank() == 0;
  checkpoints_ = std::make_unique<LearnerCheckpoints>(
      options.checkpoints, core_.get(), options.reducer, metrics);
  version_.store(version);
  if (publishes_) weights_->Publish(core_->MakeSnapshot(), version);
}

// threads_ (the last member) stops and joins the thread first if Wait was
// not called.
Learner::~Learner() = default;

void Learner::Start(std::function<void()> on_stop, StepHook on_step) {
  on_step_ = std::move(on_step);
  threads_.Start(std::move(on_stop)).Spawn("learner", [this] {
    return TorchBoundary("learner", [this] { return Loop(); });
  });
}

uint64_t Learner::version() const { return version_.load(); }

std::vector<int64_t> Learner::LagHistogram() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lag_hist_;
}

TrainablePolicy& Learner::policy() { return core_->policy(); }

absl::Status Learner::Prepare() {
  // Rank 0 tidies the folder before the ranks meet (SyncParameters): no
  // rank writes a checkpoint before then.
  if (absl::Status s =
          checkpoints_->Prepare(options_.clear_checkpoints, options_.reject);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = core_->SyncParameters(); !s.ok()) return s;
  if (options_.resume_from.empty()) return absl::OkStatus();
  if (absl::Status s = core_->LoadTrainingState(options_.resume_from,
                                                options_.resume_version);
      !s.ok()) {
    checkpoints_->SetAsideResumed(options_.resume_from, options_.resume_version,
                                  s);
    return s;
  }
  spdlog::info(
      "learner: training state restored from {} (optimizer of version {}, "
      "{} steps taken, lr {:.3g}); publishing as version {}",
      options_.resume_from, options_.resume_version, core_->steps_taken(),
      core_->learning_rate(), core_->version());
  return absl::OkStatus();
}

void Learner::Publish() {
  if (!publishes_) return;
  const int64_t t0 = SteadyNowNs();
  weights_->Publish(core_->MakeSnapshot(), core_->version());
  checkpoints_->Published(core_->version());
  const int64_t t1 = SteadyNowNs();
  m_->publish_ms->Observe((t1 - t0) / 1e6);
  timeline_->Record(StageInterval::kWeightPublish, t0, t1);
}

void Learner::SetHeldVersionSource(std::function<uint64_t()> held) {
  held_version_ = std::move(held);
}

void Learner::GoAboveHeldVersion() {
  if (!held_version_ || !publishes_) return;
  const uint64_t held = held_version_();
  const uint64_t own = core_->version();
  // Equal is no stall: the subscriber takes the next version, and segments
  // of this one are trained.
  if (held <= own) return;
  if (options_.reducer != nullptr && options_.reducer->world_size() > 1) {
    if (!held_warned_) {
      spdlog::error(
          "learner: a subscriber holds version {}, at or above this "
          "group's {}: it takes no weights until the group passes it "
          "(restart the inference servers, or resume the group from its "
          "checkpoints)",
          held, own);
      held_warned_ = true;
    }
    return;
  }
  core_->JumpAbove(held);
  CountIntake();
  version_.store(core_->version());
  spdlog::warn(
      "learner: a subscriber holds version {}, at or above this learner's "
      "{} (a fresh or older start under running servers): publishing as "
      "version {}; samples of versions {}..{} are dropped",
      held, own, core_->version(), own + 1, held);
  Publish();
}

void Learner::CountIntake() {
  auto grow = [](Counter* c, int64_t now, int64_t* seen) {
    if (now > *seen) c->Add(static_cast<uint64_t>(now - *seen));
    *seen = now;
  };
  grow(m_->dropped, core_->dropped_samples(), &m_->dropped_seen);
  grow(m_->expired, core_->expired_episodes(), &m_->expired_seen);
  grow(m_->lost, core_->lost_version_samples(), &m_->lost_seen);
  grow(m_->aged_out, core_->aged_out_samples(), &m_->aged_out_seen);
}

void Learner::SetStarvedHook(std::function<void(uint64_t)> hook) {
  starved_hook_ = std::move(hook);
}

void Learner::CheckStarved() {
  if (options_.starved_after <= absl::ZeroDuration()) return;
  const int64_t now = SteadyNowNs();
  if (now - last_fed_ns_ < absl::ToInt64Nanoseconds(options_.starved_after)) {
    return;
  }
  last_fed_ns_ = now;
  const uint64_t n = starved_.fetch_add(1) + 1;
  m_->starved->Add();
  spdlog::warn(
      "learner: no segment for {} and {} of the batch's {} units in hand "
      "({} trained, {} ready{}): units were lost on the way (a broken "
      "stream, samples of dropped versions) or no rollout worker runs; "
      "asking the rollout workers to admit one more quota each (starved {} "
      "time(s); rl.starved_after_s)",
      absl::FormatDuration(options_.starved_after),
      core_->batch_units_done() + core_->ready_units(), core_->global_units(),
      core_->batch_units_done(), core_->ready_units(),
      core_->waiting_episodes() > 0
          ? absl::StrCat(", ", core_->waiting_episodes(),
                         " episodes in groups not yet whole")
          : "",
      n);
  if (starved_hook_) starved_hook_(n);
}

void Learner::ReleaseConsumed() {
  for (RolloutSegment* s : core_->TakeConsumed()) segments_->Release(s);
}

void Learner::RecordStep(const LearnerStepStats& st, int64_t u0, int64_t u1) {
  // The version first: whoever reads a step count reads its version too.
  version_.store(st.version);
  m_->stage->AddBusy(std::chrono::nanoseconds(u1 - u0));
  timeline_->Record(StageInterval::kLearnerUpdate, u0, u1);
  m_->update_ms->Observe((u1 - u0) / 1e6);
  m_->trained->Add(static_cast<uint64_t>(st.samples));
  (st.skipped ? m_->skipped : m_->steps)->Add();
  m_->s_per_step->Set((u1 - last_step_ns_) / 1e9);
  last_step_ns_ = u1;
  m_->Set(st);
  {
    std::lock_guard<std::mutex> lock(mu_);
    lag_hist_ = core_->lag_histogram();
  }
}

absl::Status Learner::Loop() {
  if (options_.nice > 0) {
    const absl::Status nice = SetCurrentThreadNice(options_.nice);
    if (!nice.ok()) spdlog::warn("learner: {}", nice.ToString());
  }
  if (absl::Status s = Prepare(); !s.ok()) return s;
  steps_before_ = core_->steps_taken();
  const int64_t global_units = core_->global_units();
  std::vector<RolloutSegment*> buf(64);
  last_step_ns_ = SteadyNowNs();
  last_fed_ns_ = last_step_ns_;
  for (;;) {
    GoAboveHeldVersion();
    // Wait for segments (learner idle time).
    size_t n = 0;
    const int64_t w0 = SteadyNowNs();
    const QueueStatus s =
        segments_->PopBulk(buf.data(), buf.size(), absl::Milliseconds(20), &n);
    m_->stage->AddIdle(std::chrono::nanoseconds(SteadyNowNs() - w0));
    if (s == QueueStatus::kClosed && n == 0) {
      // The run's end: one more checkpoint (a group's ranks may be gone
      // already, so one rank only).
      if (options_.reducer == nullptr || options_.reducer->world_size() == 1) {
        return checkpoints_->Final();
      }
      return absl::OkStatus();
    }
    if (n > 0) {
      const int64_t now = SteadyNowNs();
      last_fed_ns_ = now;
      std::vector<RolloutSegment*> got(buf.begin(), buf.begin() + n);
      for (RolloutSegment* seg : got)
        m_->trajectory_dwell_ms->Observe((now - seg->enqueue_ns) / 1e6);
      core_->Add(got);
      CountIntake();
    }
    // Sync wiring: the whole rollout first, then train.
    if (options_.whole_batch && core_->ready_units() < global_units) {
      ReleaseConsumed();
      CheckStarved();
      continue;
    }
    while (options_.whole_batch ? core_->CanTrain() : core_->ShouldTrain()) {
      const int64_t t0 = SteadyNowNs();
      core_->TrainMicroBatch();
      const int64_t t1 = SteadyNowNs();
      last_fed_ns_ = t1;
      m_->stage->AddBusy(std::chrono::nanoseconds(t1 - t0));
      timeline_->Record(StageInterval::kLearnerUpdate, t0, t1);
      if (!core_->ReadyToStep()) continue;
      const int64_t u0 = SteadyNowNs();
      LearnerStepStats st = core_->Step();
      if (!core_->group_status().ok()) return core_->group_status();
      CountIntake();
      RecordStep(st, u0, SteadyNowNs());
      if (on_step_) on_step_(st);
      Publish();
      if (absl::Status s = checkpoints_->AfterStep(); !s.ok()) return s;
      last_fed_ns_ = SteadyNowNs();  // a long step or checkpoint is no hunger
      // rl.max_steps counts the run's steps, a resumed learner's included.
      if (options_.max_steps > 0 &&
          static_cast<int64_t>(m_->steps->value()) + steps_before_.load() >=
              options_.max_steps) {
        done_.store(true, std::memory_order_relaxed);
      }
    }
    ReleaseConsumed();
    CheckStarved();
  }
}

}  // namespace rlvla3
