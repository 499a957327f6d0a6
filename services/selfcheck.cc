#include "services/selfcheck.h"

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

}  // namespace

absl::StatusOr<SelfCheckReport> RunSelfCheck(
    const Config& config, MetricsRegistry* metrics,
    const std::function<void(const MetricsSnapshot&)>& on_tick) {
  const auto& sc = config.selfcheck;
  torch::manual_seed(static_cast<uint64_t>(config.run.seed));

  const int64_t num_envs = sc.num_envs;
  std::vector<std::unique_ptr<EnvSlot>> slots;
  for (int64_t i = 0; i < num_envs; ++i) {
    auto s = std::make_unique<EnvSlot>();
    s->obs.resize(static_cast<size_t>(sc.obs_dim));
    s->action.resize(static_cast<size_t>(sc.action_dim));
    slots.push_back(std::move(s));
  }

  QueueOptions qopts = config.queues.request.ToOptions();
  qopts.max_producers =
      std::max<size_t>(qopts.max_producers, static_cast<size_t>(num_envs));
  BoundedQueue<Request> requests(qopts);
  DynamicBatcher<Request> batcher(&requests, config.batcher.ToOptions());

  torch::nn::Sequential policy(
      torch::nn::Linear(sc.obs_dim, sc.hidden), torch::nn::Tanh(),
      torch::nn::Linear(sc.hidden, sc.action_dim), torch::nn::Tanh());
  policy->eval();

  Counter& frames = metrics->counter("env_frames");
  Counter& replies_ctr = metrics->counter("replies");
  Histogram& wait_ms = metrics->histogram(
      "wait_for_action_ms",
      +[] { return Histogram::Exponential(0.01, 1.5, 40); });
  StageTimer& env_stage = metrics->stage("env_step");
  StageTimer& infer_stage = metrics->stage("inference");
  Gauge& depth = metrics->gauge("request_queue_depth");
  std::atomic<int64_t> mismatched{0};
  std::atomic<uint64_t> codec_bytes{0};
  std::atomic<int64_t> envs_left{num_envs};

  // On the first error: close the queue (actors and producers unblock) and wake
  // every env waiting for a reply.
  Supervisor sup([&] {
    requests.Close();
    for (auto& s : slots) s->replied.signal();
  });
  const auto t0 = Clock::now();
  for (int64_t e = 0; e < num_envs; ++e) {
    sup.Spawn(absl::StrFormat("env-%d", e), [&, e]() -> absl::Status {
      EnvSlot& slot = *slots[static_cast<size_t>(e)];
      std::mt19937 rng(static_cast<uint32_t>(config.run.seed + e));
      std::normal_distribution<float> noise(0.0f, 1.0f);
      const auto step_time =
          std::chrono::nanoseconds(static_cast<int64_t>(sc.env_step_ms * 1e6));
      for (int32_t step = 0; step < sc.steps_per_env; ++step) {
        {
          StageTimer::Scope busy(env_stage);
          for (auto& v : slot.obs) v = noise(rng);
          std::this_thread::sleep_for(step_time);  // the emulated simulator
        }
        StageTimer::IdleScope idle(env_stage);
        const int64_t submit = SteadyNowNs();
        if (requests.Push(Request{static_cast<int32_t>(e), step, submit}) !=
            QueueStatus::kOk) {
          return absl::CancelledError("request queue closed");
        }
        slot.replied.wait();
        if (slot.reply_step != step && sup.stopping())
          return absl::CancelledError("stopped");
        if (slot.reply_step != step) mismatched.fetch_add(1);
        wait_ms.Observe(static_cast<double>(SteadyNowNs() - submit) * 1e-6);
        frames.Add();
      }
      if (envs_left.fetch_sub(1) == 1)
        requests.Close();  // last env: let actors drain and exit
      return absl::OkStatus();
    });
  }
  for (int64_t a = 0; a < config.threads.inference_actors; ++a) {
    sup.Spawn(absl::StrFormat("actor-%d", a), [&]() -> absl::Status {
      torch::NoGradGuard no_grad;
      std::vector<Request> batch;
      batch.reserve(static_cast<size_t>(config.batcher.max_batch));
      at::Tensor obs = torch::empty({config.batcher.max_batch, sc.obs_dim});
      v1::Tensor wire;
      for (;;) {
        QueueStatus s;
        {
          StageTimer::IdleScope idle(infer_stage);
          s = batcher.NextBatch(batch);
        }
        if (s == QueueStatus::kClosed) return absl::OkStatus();
        if (s != QueueStatus::kOk) continue;
        StageTimer::Scope busy(infer_stage);
        depth.Set(static_cast<double>(requests.depth()));
        const int64_t n = static_cast<int64_t>(batch.size());
        float* dst = obs.data_ptr<float>();
        for (int64_t i = 0; i < n; ++i) {
          const auto& src = slots[static_cast<size_t>(batch[i].env_id)]->obs;
          std::copy(src.begin(), src.end(), dst + i * sc.obs_dim);
        }
        // Through the wire format and back, validated, as a remote actor would
        // see it.
        if (absl::Status st = EncodeTensor(obs.narrow(0, 0, n), &wire);
            !st.ok())
          return st;
        codec_bytes.fetch_add(wire.data().size(), std::memory_order_relaxed);
        absl::StatusOr<at::Tensor> decoded = DecodeTensor(
            wire, "selfcheck.obs",
            {v1::DTYPE_FLOAT32, std::vector<int64_t>{n, sc.obs_dim}});
        if (!decoded.ok()) return decoded.status();
        const at::Tensor actions = policy->forward(*decoded).contiguous();
        const float* act = actions.data_ptr<float>();
        for (int64_t i = 0; i < n; ++i) {
          EnvSlot& slot = *slots[static_cast<size_t>(batch[i].env_id)];
          std::copy(act + i * sc.action_dim, act + (i + 1) * sc.action_dim,
                    slot.action.begin());
          slot.reply_step = batch[i].step;
          replies_ctr.Add();
          slot.replied.signal();
        }
      }
    });
  }

  // The calling thread ticks the metrics until every worker is done.
  const auto tick = std::chrono::milliseconds(
      static_cast<int64_t>(config.metrics.interval_s * 1e3));
  while (sup.running() > 0) {
    const auto until = Clock::now() + tick;
    while (sup.running() > 0 && Clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (on_tick) on_tick(metrics->Snapshot());
  }
  if (absl::Status s = sup.Wait(); !s.ok()) return s;
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();

  SelfCheckReport r;
  r.envs = num_envs;
  r.observations = static_cast<int64_t>(requests.stats().pushed);
  r.replies = static_cast<int64_t>(replies_ctr.value());
  r.mismatched_replies = mismatched.load();
  r.wall_s = wall;
  r.env_frames_per_s = static_cast<double>(frames.value()) / wall;
  const BatcherStats bs = batcher.stats();
  r.mean_batch =
      bs.batches == 0 ? 0.0 : static_cast<double>(bs.items) / bs.batches;
  r.max_batch_seen = static_cast<int64_t>(bs.batch_size.max);
  r.batcher_max_batch = config.batcher.max_batch;
  const HistogramSnapshot w = wait_ms.Snapshot();
  r.request_wait_ms_mean = w.mean();
  r.request_wait_ms_p99 = w.Quantile(0.99);
  r.inference_busy_pct = infer_stage.busy_percent();
  r.env_busy_pct = env_stage.busy_percent();
  r.codec_bytes = codec_bytes.load();
  return r;
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
