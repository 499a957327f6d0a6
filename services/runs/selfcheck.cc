#include "services/runs/selfcheck.h"

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "absl/strings/str_format.h"
#include "concurrentqueue/lightweightsemaphore.h"
#include "rlvla3/v1/tensor.pb.h"
#include "runtime/bounded_queue.h"
#include "runtime/dynamic_batcher.h"
#include "runtime/steady_clock.h"
#include "runtime/supervisor.h"
#include "runtime/tensor_codec.h"

namespace rlvla3 {
namespace {

using Clock = std::chrono::steady_clock;

// One request on the queue: which env, which step, when it was submitted. The
// observation itself stays in the env's slot (no per-item allocation).
struct Request {
  int32_t env_id = -1;
  int32_t step = -1;
  int64_t submit_ns = 0;
};

// Per-env mailbox. The env writes `obs` then submits; the actor reads `obs`,
// writes `action` and `reply_step`, then signals. The env is blocked in
// between, so the buffers are never touched by two threads at once.
struct EnvSlot {
  std::vector<float> obs;
  std::vector<float> action;
  int32_t reply_step = -1;
  moodycamel::LightweightSemaphore replied;
};

// The self-check's run: emulated envs submit observations to the request
// queue and wait for their action; actors batch them dynamically, send each
// batch through the wire codec and a small MLP, and reply. Every thread is a
// Supervisor task; the first error closes the queue and wakes every env.
class SelfCheck {
 public:
  SelfCheck(const SelfCheckOptions& o, MetricsRegistry* metrics)
      : sc_(o),
        metrics_(metrics),
        requests_(o.requests),
        batcher_(&requests_, o.batcher),
        policy_(torch::nn::Linear(sc_.obs_dim, sc_.hidden), torch::nn::Tanh(),
                torch::nn::Linear(sc_.hidden, sc_.action_dim),
                torch::nn::Tanh()),
        frames_(metrics->counter("env_frames")),
        replies_(metrics->counter("replies")),
        wait_ms_(metrics->histogram(
            "wait_for_action_ms",
            +[] { return Histogram::Exponential(0.01, 1.5, 40); })),
        env_stage_(metrics->stage("env_step")),
        infer_stage_(metrics->stage("inference")),
        depth_(metrics->gauge("request_queue_depth")),
        envs_left_(sc_.num_envs),
        sup_([this] {
          requests_.Close();
          for (auto& s : slots_) s->replied.signal();
        }) {
    policy_->eval();
    for (int64_t i = 0; i < sc_.num_envs; ++i) {
      auto slot = std::make_unique<EnvSlot>();
      slot->obs.resize(static_cast<size_t>(sc_.obs_dim));
      slot->action.resize(static_cast<size_t>(sc_.action_dim));
      slots_.push_back(std::move(slot));
    }
  }

  absl::StatusOr<SelfCheckReport> Run(
      const std::function<void(const MetricsSnapshot&)>& on_tick) {
    const auto t0 = Clock::now();
    for (int64_t e = 0; e < sc_.num_envs; ++e) {
      sup_.Spawn(absl::StrFormat("env-%d", e),
                 [this, e] { return EnvLoop(e); });
    }
    for (int64_t a = 0; a < sc_.inference_actors; ++a) {
      sup_.Spawn(absl::StrFormat("actor-%d", a),
                 [this] { return ActorLoop(); });
    }
    // The calling thread ticks the metrics until every worker is done.
    const auto tick =
        std::chrono::milliseconds(static_cast<int64_t>(sc_.tick_s * 1e3));
    while (sup_.running() > 0) {
      const auto until = Clock::now() + tick;
      while (sup_.running() > 0 && Clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
      if (on_tick) on_tick(metrics_->Snapshot());
    }
    if (absl::Status s = sup_.Wait(); !s.ok()) return s;
    return Report(std::chrono::duration<double>(Clock::now() - t0).count());
  }

 private:
  // One emulated env: make an observation (sleeping env_step_ms as the
  // simulator), submit it, wait for the action that answers this step.
  absl::Status EnvLoop(int64_t e) {
    EnvSlot& slot = *slots_[static_cast<size_t>(e)];
    std::mt19937 rng(
        static_cast<uint32_t>(sc_.seed + static_cast<uint64_t>(e)));
    std::normal_distribution<float> noise(0.0f, 1.0f);
    const auto step_time =
        std::chrono::nanoseconds(static_cast<int64_t>(sc_.env_step_ms * 1e6));
    for (int32_t step = 0; step < sc_.steps_per_env; ++step) {
      {
        StageTimer::Scope busy(env_stage_);
        for (auto& v : slot.obs) v = noise(rng);
        std::this_thread::sleep_for(step_time);  // the emulated simulator
      }
      StageTimer::IdleScope idle(env_stage_);
      const int64_t submit = SteadyNowNs();
      if (requests_.Push(Request{static_cast<int32_t>(e), step, submit}) !=
          QueueStatus::kOk) {
        return absl::CancelledError("request queue closed");
      }
      slot.replied.wait();
      if (slot.reply_step != step && sup_.stopping())
        return absl::CancelledError("stopped");
      if (slot.reply_step != step) mismatched_.fetch_add(1);
      wait_ms_.Observe(static_cast<double>(SteadyNowNs() - submit) * 1e-6);
      frames_.Add();
    }
    if (envs_left_.fetch_sub(1) == 1)
      requests_.Close();  // last env: let actors drain and exit
    return absl::OkStatus();
  }

  absl::Status ActorLoop() {
    torch::NoGradGuard no_grad;
    std::vector<Request> batch;
    const auto max_batch = static_cast<int64_t>(sc_.batcher.max_batch);
    batch.reserve(static_cast<size_t>(max_batch));
    at::Tensor obs = torch::empty({max_batch, sc_.obs_dim});
    v1::Tensor wire;
    for (;;) {
      QueueStatus s;
      {
        StageTimer::IdleScope idle(infer_stage_);
        s = batcher_.NextBatch(batch);
      }
      if (s == QueueStatus::kClosed) return absl::OkStatus();
      if (s != QueueStatus::kOk) continue;
      StageTimer::Scope busy(infer_stage_);
      if (absl::Status st = Answer(batch, obs, &wire); !st.ok()) return st;
    }
  }

  // One batch: gathered, through the wire format and back (validated, as a
  // remote actor would see it), the policy, each env's action and signal.
  absl::Status Answer(const std::vector<Request>& batch, at::Tensor& obs,
                      v1::Tensor* wire) {
    depth_.Set(static_cast<double>(requests_.depth()));
    const int64_t n = static_cast<int64_t>(batch.size());
    float* dst = obs.data_ptr<float>();
    for (int64_t i = 0; i < n; ++i) {
      const auto& src = slots_[static_cast<size_t>(batch[i].env_id)]->obs;
      std::copy(src.begin(), src.end(), dst + i * sc_.obs_dim);
    }
    if (absl::Status st = EncodeTensor(obs.narrow(0, 0, n), wire); !st.ok())
      return st;
    codec_bytes_.fetch_add(wire->data().size(), std::memory_order_relaxed);
    absl::StatusOr<at::Tensor> decoded =
        DecodeTensor(*wire, "selfcheck.obs",
                     {v1::DTYPE_FLOAT32, std::vector<int64_t>{n, sc_.obs_dim}});
    if (!decoded.ok()) return decoded.status();
    const at::Tensor actions = policy_->forward(*decoded).contiguous();
    const float* act = actions.data_ptr<float>();
    for (int64_t i = 0; i < n; ++i) {
      EnvSlot& slot = *slots_[static_cast<size_t>(batch[i].env_id)];
      std::copy(act + i * sc_.action_dim, act + (i + 1) * sc_.action_dim,
                slot.action.begin());
      slot.reply_step = batch[i].step;
      replies_.Add();
      slot.replied.signal();
    }
    return absl::OkStatus();
  }

  SelfCheckReport Report(double wall) {
    SelfCheckReport r;
    r.envs = sc_.num_envs;
    r.observations = static_cast<int64_t>(requests_.stats().pushed);
    r.replies = static_cast<int64_t>(replies_.value());
    r.mismatched_replies = mismatched_.load();
    r.wall_s = wall;
    r.env_frames_per_s = static_cast<double>(frames_.value()) / wall;
    const BatcherStats bs = batcher_.stats();
    r.mean_batch =
        bs.batches == 0 ? 0.0 : static_cast<double>(bs.items) / bs.batches;
    r.max_batch_seen = static_cast<int64_t>(bs.batch_size.max);
    r.batcher_max_batch = static_cast<int64_t>(sc_.batcher.max_batch);
    const HistogramSnapshot w = wait_ms_.Snapshot();
    r.request_wait_ms_mean = w.mean();
    r.request_wait_ms_p99 = w.Quantile(0.99);
    r.inference_busy_pct = infer_stage_.busy_percent();
    r.env_busy_pct = env_stage_.busy_percent();
    r.codec_bytes = codec_bytes_.load();
    return r;
  }

  const SelfCheckOptions sc_;
  MetricsRegistry* metrics_;
  std::vector<std::unique_ptr<EnvSlot>> slots_;
  BoundedQueue<Request> requests_;
  DynamicBatcher<Request> batcher_;
  torch::nn::Sequential policy_;
  Counter& frames_;
  Counter& replies_;
  Histogram& wait_ms_;
  StageTimer& env_stage_;
  StageTimer& infer_stage_;
  Gauge& depth_;
  std::atomic<int64_t> mismatched_{0};
  std::atomic<uint64_t> codec_bytes_{0};
  std::atomic<int64_t> envs_left_;
  Supervisor sup_;  // last: its tasks use every member above
};

}  // namespace

absl::StatusOr<SelfCheckReport> RunSelfCheck(
    const SelfCheckOptions& options, MetricsRegistry* metrics,
    const std::function<void(const MetricsSnapshot&)>& on_tick) {
  torch::manual_seed(options.seed);
  SelfCheck check(options, metrics);
  return check.Run(on_tick);
}

std::string FormatSelfCheckReport(const SelfCheckReport& r) {
  return absl::StrFormat(
      "self-check %s: %d envs submitted %d observations, %d replies (%d "
      "mismatched) in %.2f s\n"
      "  env frames/s      %.0f\n"
      "  inference batch   mean %.1f, max %d of B_max %d\n"
      "  wait for action   mean %.2f ms, p99 %.2f ms\n"
      "  stage busy        env %.0f%%, inference %.0f%%\n"
      "  wire codec        %.1f MB round-tripped and validated",
      r.ok() ? "PASSED" : "FAILED", r.envs, r.observations, r.replies,
      r.mismatched_replies, r.wall_s, r.env_frames_per_s, r.mean_batch,
      r.max_batch_seen, r.batcher_max_batch, r.request_wait_ms_mean,
      r.request_wait_ms_p99, r.env_busy_pct, r.inference_busy_pct,
      static_cast<double>(r.codec_bytes) / 1e6);
}

}  // namespace rlvla3
