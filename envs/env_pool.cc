#include "envs/env_pool.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <queue>
#include <random>
#include <stdexcept>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "envs/egl_context.h"
#include "envs/task_file.h"
#include "runtime/supervisor.h"

namespace rlvla3 {
namespace {

using Clock = std::chrono::steady_clock;

// Ready env ids in flight at most: every env once, plus close tokens.
constexpr size_t kStateQueueSlack = 8;

// The contract every env output keeps: image sizes from the options, finite
// proprio.
absl::Status CheckObservation(const Observation& o, const EnvOptions& e) {
  const size_t bytes = static_cast<size_t>(e.image_width) *
                       static_cast<size_t>(e.image_height) * 3;
  if (o.agentview.size() != bytes || o.wrist.size() != bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("observation images: ", o.agentview.size(), " and ",
                     o.wrist.size(), " bytes, expected ", bytes, " ([",
                     e.image_height, ", ", e.image_width, ", 3])"));
  }
  for (int i = 0; i < kProprioDim; ++i) {
    if (!std::isfinite(o.proprio[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat("observation.proprio[", i, "] is ", o.proprio[i]));
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::string LatencyModel::Describe() const {
  if (!enabled()) return "off";
  return absl::StrFormat("lognormal, mean %.1f ms, cv %.2f", mean_ms, cv);
}

// Per-env bookkeeping; the owning worker is the only writer between a Send
// and the matching Recv.
struct EnvSlot {
  std::unique_ptr<ManipulationEnv> env;
  float action[kActionDim] = {};
  std::atomic<bool> pending{false};  // an action is queued or being stepped
  bool needs_reset = false;          // the last state ended its episode
  int next_init = -1;                // init state of the next reset (-1: own)
  EnvState state;
  std::mt19937_64 latency_rng;
  int64_t stepped = 0;  // steps asked of it, across episodes (fault plans)
  Observation damaged;  // an injected broken observation
};

struct EnvPool::Impl {
  explicit Impl(const EnvPoolOptions& o)
      : options(o),
        state_queue(QueueOptions{
            static_cast<size_t>(o.num_envs) + kStateQueueSlack,
            OverflowPolicy::kBlock, static_cast<size_t>(o.num_threads) + 2}),
        step_ms(Histogram::Exponential(0.25, 1.5, 24)),
        supervisor([this] { StopAll(); }) {}

  void StopAll() {
    for (auto& q : action_queues) q->Close();
    state_queue.Close();
    {
      std::lock_guard<std::mutex> lock(delay_mu);
      stopping = true;
    }
    delay_cv.notify_all();
  }

  const EnvPoolOptions options;
  std::vector<std::unique_ptr<EnvSlot>> slots;
  std::vector<std::unique_ptr<BoundedQueue<int>>>
      action_queues;  // one per worker
  BoundedQueue<int> state_queue;
  // Latency model: states held back until their release time.
  std::mutex delay_mu;
  std::condition_variable delay_cv;
  std::priority_queue<std::pair<Clock::time_point, int>,
                      std::vector<std::pair<Clock::time_point, int>>,
                      std::greater<>>
      delayed;
  bool stopping = false;
  std::function<void(int)> on_ready;

  Histogram step_ms;
  std::atomic<uint64_t> steps{0}, resets{0}, done{0}, truncated{0}, unstable{0},
      invalid{0}, faults{0};
  Supervisor supervisor;
  bool closed = false;
};

void EnvPool::ResetEnv(Impl& im, int id) {
  EnvSlot& slot = *im.slots[id];
  if (slot.next_init >= 0) {
    slot.env->Reset(slot.next_init);
    slot.next_init = -1;
  } else {
    slot.env->Reset();
  }
  slot.needs_reset = false;
  slot.state.result = StepResult{};
  im.resets.fetch_add(1, std::memory_order_relaxed);
}

absl::Status EnvPool::StepAndCheck(Impl& im, int id) {
  EnvSlot& slot = *im.slots[id];
  ManipulationEnv& env = *slot.env;
  const std::optional<FaultKind> injected =
      im.options.faults.At(im.options.first_env_id + id, ++slot.stepped);
  if (injected == FaultKind::kThrow) {
    throw std::runtime_error("injected fault (env.faults)");
  }
  if (injected == FaultKind::kHang) {
    std::this_thread::sleep_for(
        std::chrono::duration<double>(im.options.faults.hang_s));
  }
  absl::StatusOr<StepResult> r =
      env.Step(absl::MakeConstSpan(slot.action, kActionDim));
  if (!r.ok()) {
    slot.state.error = r.status();
    im.invalid.fetch_add(1, std::memory_order_relaxed);
    return absl::OkStatus();
  }
  slot.state.result = *r;
  im.steps.fetch_add(1, std::memory_order_relaxed);
  if (r->done || r->truncated) slot.needs_reset = true;
  if (r->done) im.done.fetch_add(1, std::memory_order_relaxed);
  if (r->truncated && !r->unstable)
    im.truncated.fetch_add(1, std::memory_order_relaxed);
  if (r->unstable) {
    im.unstable.fetch_add(1, std::memory_order_relaxed);
    spdlog::warn(
        "env {}: physics became unstable at step {}; episode "
        "truncated",
        im.options.first_env_id + id, env.step_count());
  }
  const Observation* out = &env.observation();
  if (injected == FaultKind::kWrongShape || injected == FaultKind::kNaN) {
    slot.damaged = *out;
    if (injected == FaultKind::kWrongShape) {
      slot.damaged.agentview.resize(slot.damaged.agentview.size() / 2);
    } else {
      slot.damaged.proprio[0] = std::numeric_limits<float>::quiet_NaN();
    }
    out = &slot.damaged;
  }
  return CheckObservation(*out, im.options.env);
}

// Announcing the state is the caller's part (the sweep in the worker loop).
Clock::time_point EnvPool::StepEnv(Impl& im, int id) {
  EnvSlot& slot = *im.slots[id];
  ManipulationEnv& env = *slot.env;
  const auto t0 = Clock::now();
  slot.state.error = absl::OkStatus();
  absl::Status fault;
  try {
    if (slot.needs_reset) {
      ResetEnv(im, id);
    } else {
      fault = StepAndCheck(im, id);
    }
  } catch (const std::exception& e) {
    fault = absl::InternalError(absl::StrCat("the env crashed: ", e.what()));
  }
  const double deadline_s = im.options.step_deadline_s;
  const double took_s =
      std::chrono::duration<double>(Clock::now() - t0).count();
  if (fault.ok() && deadline_s > 0 && took_s > deadline_s) {
    fault = absl::DeadlineExceededError(
        absl::StrFormat("a step took %.2f s, past env.step_deadline_s %.2f s",
                        took_s, deadline_s));
  }
  slot.state.fault = fault;
  if (!fault.ok()) {
    slot.state.result = StepResult{};
    slot.state.result.truncated = true;
    slot.needs_reset = true;
    im.faults.fetch_add(1, std::memory_order_relaxed);
    spdlog::warn("env {}: {}; episode ended, env reset",
                 im.options.first_env_id + id, fault.ToString());
  }
  slot.state.step = env.step_count();
  slot.state.episode_id = env.episode_id();
  slot.state.init_id = env.init_id();
  const auto t1 = Clock::now();
  slot.state.step_ms =
      std::chrono::duration<double, std::milli>(t1 - t0).count();
  slot.state.step_begin_ns = t0.time_since_epoch().count();
  slot.state.step_end_ns = t1.time_since_epoch().count();
  im.step_ms.Observe(slot.state.step_ms);
  return t0;
}

EnvPool::EnvPool(const EnvPoolOptions& options)
    : options_(options), impl_(std::make_unique<Impl>(options)) {}

EnvPool::~EnvPool() { Close(); }

void EnvPool::Close() {
  if (impl_ == nullptr || impl_->closed) return;
  impl_->closed = true;
  impl_->supervisor.RequestStop();
  absl::Status s = impl_->supervisor.Wait();
  if (!s.ok()) spdlog::warn("env pool stopped with: {}", s.ToString());
}

absl::StatusOr<std::unique_ptr<EnvPool>> EnvPool::Create(
    const EnvPoolOptions& o) {
  if (o.tasks.empty()) return absl::InvalidArgumentError("env pool: no tasks");
  if (o.num_envs < 1 || o.num_threads < 1) {
    return absl::InvalidArgumentError(
        "env pool: num_envs and num_threads must be >= 1");
  }
  if (o.env.render) ConfigureSoftwareRasterizer(o.lp_num_threads);
  std::map<std::string, std::shared_ptr<const TaskModel>> models;
  for (const auto& name : o.tasks) {
    if (models.count(name) == 0) {
      absl::StatusOr<TaskSpec> spec = ResolveTask(name);
      if (!spec.ok()) return spec.status();
      absl::StatusOr<std::shared_ptr<const TaskModel>> m =
          TaskModel::Create(*spec, o.env);
      if (!m.ok()) return m.status();
      models[name] = *m;
    }
  }
  std::unique_ptr<EnvPool> pool(new EnvPool(o));
  Impl& impl = *pool->impl_;
  impl.on_ready = o.on_ready;
  for (int i = 0; i < o.num_envs; ++i) {
    impl.slots.push_back(std::make_unique<EnvSlot>());
    impl.slots.back()->latency_rng.seed(o.seed + static_cast<uint64_t>(i) +
                                        0x5EEDull);
  }
  const int threads = std::min(o.num_threads, o.num_envs);
  pool->options_.num_threads = threads;
  for (int w = 0; w < threads; ++w) {
    QueueOptions q;
    q.capacity = static_cast<size_t>((o.num_envs + threads - 1) / threads) + 1;
    q.max_producers = 4;
    impl.action_queues.push_back(std::make_unique<BoundedQueue<int>>(q));
  }
  // Workers create their envs (and GL contexts) on their own threads.
  std::mutex init_mu;
  std::condition_variable init_cv;
  int initialised = 0;
  absl::Status init_error;
  const double sigma2 = std::log(1.0 + o.latency.cv * o.latency.cv);
  const double mu =
      o.latency.enabled() ? std::log(o.latency.mean_ms) - sigma2 / 2 : 0.0;
  for (int w = 0; w < threads; ++w) {
    // The worker outlives Create(): after initialisation it may use only the
    // pool itself (`pool_ptr`), never Create()'s locals or its argument.
    impl.supervisor.Spawn(
        absl::StrCat("env-worker-", w),
        [&, w, sigma2, mu, pool_ptr = pool.get()]() -> absl::Status {
          Impl& im = *pool_ptr->impl_;
          const EnvPoolOptions& o = pool_ptr->options_;
          std::unique_ptr<EglContext> gl;
          std::map<std::string, std::shared_ptr<Renderer>> renderers;
          absl::Status st;
          if (o.env.render) {
            absl::StatusOr<std::unique_ptr<EglContext>> c =
                EglContext::Create();
            if (c.ok()) {
              gl = *std::move(c);
            } else {
              st = c.status();
            }
          }
          for (int i = w; st.ok() && i < o.num_envs; i += threads) {
            const std::string& task =
                o.tasks[static_cast<size_t>(i) % o.tasks.size()];
            const auto& model = models.at(task);
            std::shared_ptr<Renderer> r;
            if (o.env.render) {
              auto& shared = renderers[task];
              if (shared == nullptr) {
                absl::StatusOr<std::unique_ptr<Renderer>> made =
                    Renderer::Create(model->model(), o.env.image_width,
                                     o.env.image_height);
                if (!made.ok()) {
                  st = made.status();
                  break;
                }
                shared = *std::move(made);
              }
              r = shared;
            }
            absl::StatusOr<std::unique_ptr<ManipulationEnv>> env =
                ManipulationEnv::Create(model, o.env, o.seed, i, r);
            if (!env.ok()) {
              st = env.status();
              break;
            }
            EnvSlot& slot = *im.slots[i];
            slot.env = *std::move(env);
            slot.state.env_id = i;
            slot.state.obs = &slot.env->observation();
            slot.state.episode_id = slot.env->episode_id();
            slot.state.init_id = slot.env->init_id();
          }
          {
            // Notified under the lock: once Create sees the last worker
            // counted it returns and destroys init_cv, so no worker may
            // still be inside notify_all then (found by TSan).
            std::lock_guard<std::mutex> lock(init_mu);
            if (!st.ok() && init_error.ok()) init_error = st;
            ++initialised;
            init_cv.notify_all();
          }
          if (!st.ok()) return st;
          // Serve steps until the action queue closes. A sweep steps every
          // queued env (up to max_sweep) before announcing them, so their
          // requests reach the inference batcher together.
          BoundedQueue<int>& actions = *im.action_queues[w];
          std::lognormal_distribution<double> latency(mu, std::sqrt(sigma2));
          const size_t max_sweep =
              static_cast<size_t>(std::max(1, o.max_sweep));
          std::vector<int> sweep(max_sweep), ready;
          ready.reserve(max_sweep);
          for (;;) {
            size_t n = 0;
            if (actions.PopBulk(sweep.data(), max_sweep,
                                absl::InfiniteDuration(),
                                &n) != QueueStatus::kOk)
              return absl::OkStatus();
            ready.clear();
            for (size_t k = 0; k < n; ++k) {
              const int id = sweep[k];
              const Clock::time_point began = EnvPool::StepEnv(im, id);
              EnvSlot& slot = *im.slots[id];
              if (!o.latency.enabled()) {
                ready.push_back(id);
                continue;
              }
              const auto release =
                  began + std::chrono::microseconds(static_cast<int64_t>(
                              latency(slot.latency_rng) * 1000.0));
              {
                std::lock_guard<std::mutex> lock(im.delay_mu);
                im.delayed.emplace(release, id);
              }
              im.delay_cv.notify_one();
            }
            for (int id : ready) {
              im.slots[id]->pending.store(false, std::memory_order_release);
              if (o.on_ready) {
                o.on_ready(id);
              } else if (im.state_queue.Push(id) != QueueStatus::kOk) {
                return absl::OkStatus();
              }
            }
          }
        });
  }
  {
    std::unique_lock<std::mutex> lock(init_mu);
    init_cv.wait(lock, [&] { return initialised == threads; });
    if (!init_error.ok())
      return init_error;  // the destructor stops the workers
  }
  if (o.latency.enabled()) {
    impl.supervisor.Spawn("env-latency-timer", [&impl]() -> absl::Status {
      std::unique_lock<std::mutex> lock(impl.delay_mu);
      for (;;) {
        if (impl.stopping) return absl::OkStatus();
        if (impl.delayed.empty()) {
          impl.delay_cv.wait(lock);
          continue;
        }
        const auto [when, id] = impl.delayed.top();
        if (Clock::now() < when) {
          impl.delay_cv.wait_until(lock, when);
          continue;
        }
        impl.delayed.pop();
        impl.slots[id]->pending.store(false, std::memory_order_release);
        lock.unlock();
        if (impl.on_ready) {
          impl.on_ready(id);
        } else if (impl.state_queue.Push(id) != QueueStatus::kOk) {
          return absl::OkStatus();  // closed: the pool is stopping
        }
        lock.lock();
      }
    });
  }
  spdlog::info(
      "env pool: {} envs on {} worker threads, {}x{} cameras{}; latency model: "
      "{}",
      o.num_envs, threads, o.env.image_width, o.env.image_height,
      o.env.render ? "" : " (not rendered)", o.latency.Describe());
  // Every env starts ready with its reset observation.
  if (!o.on_ready) {
    for (int i = 0; i < o.num_envs; ++i) {
      if (impl.state_queue.Push(i) != QueueStatus::kOk) {
        return absl::InternalError("env pool: state queue closed at start");
      }
    }
  }
  return pool;
}

absl::Status EnvPool::Send(absl::Span<const int> env_ids,
                           absl::Span<const float> actions) {
  if (actions.size() != env_ids.size() * kActionDim) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Send: ", actions.size(), " action values for ", env_ids.size(),
        " envs, expected ", env_ids.size() * kActionDim));
  }
  for (int id : env_ids) {
    if (id < 0 || id >= options_.num_envs) {
      return absl::InvalidArgumentError(
          absl::StrCat("Send: env id ", id, " out of range"));
    }
    if (impl_->slots[id]->pending.load(std::memory_order_acquire)) {
      return absl::InvalidArgumentError(
          absl::StrCat("Send: env ", id, " already has an action"));
    }
  }
  for (size_t k = 0; k < env_ids.size(); ++k) {
    EnvSlot& slot = *impl_->slots[env_ids[k]];
    std::copy(actions.begin() + k * kActionDim,
              actions.begin() + (k + 1) * kActionDim, slot.action);
    slot.pending.store(true, std::memory_order_release);
    const int worker = env_ids[k] % options_.num_threads;
    if (impl_->action_queues[worker]->Push(env_ids[k]) != QueueStatus::kOk) {
      return absl::CancelledError("env pool is closed");
    }
  }
  return absl::OkStatus();
}

absl::Status EnvPool::Recv(int min_envs, absl::Duration timeout,
                           std::vector<int>* env_ids) {
  const absl::Time deadline = absl::Now() + timeout;
  int got = 0;
  int buf[64];
  while (got < min_envs) {
    size_t n = 0;
    const absl::Duration left = deadline - absl::Now();
    QueueStatus s = impl_->state_queue.PopBulk(
        buf, 64, std::max(left, absl::ZeroDuration()), &n);
    env_ids->insert(env_ids->end(), buf, buf + n);
    got += static_cast<int>(n);
    if (s == QueueStatus::kClosed)
      return absl::CancelledError("env pool is closed");
    if (s == QueueStatus::kTimeout ||
        (got < min_envs && absl::Now() >= deadline)) {
      return absl::DeadlineExceededError(
          absl::StrCat("Recv: ", got, " of ", min_envs, " envs ready in time"));
    }
  }
  // Take whatever else is ready without waiting.
  size_t n = 0;
  while (impl_->state_queue.PopBulk(buf, 64, absl::ZeroDuration(), &n) ==
             QueueStatus::kOk &&
         n > 0) {
    env_ids->insert(env_ids->end(), buf, buf + n);
  }
  return absl::OkStatus();
}

const EnvState& EnvPool::state(int env_id) const {
  return impl_->slots[env_id]->state;
}

void EnvPool::SetNextReset(int env_id, int init_id) {
  EnvSlot& slot = *impl_->slots[env_id];
  slot.next_init = init_id;
  slot.needs_reset = true;
}

const ManipulationEnv& EnvPool::env(int env_id) const {
  return *impl_->slots[env_id]->env;
}

EnvPoolStats EnvPool::stats() const {
  EnvPoolStats s;
  s.steps = impl_->steps.load();
  s.resets = impl_->resets.load();
  s.episodes_done = impl_->done.load();
  s.truncations = impl_->truncated.load();
  s.unstable_resets = impl_->unstable.load();
  s.invalid_actions = impl_->invalid.load();
  s.faults = impl_->faults.load();
  s.step_ms = impl_->step_ms.Snapshot();
  return s;
}

}  // namespace rlvla3
