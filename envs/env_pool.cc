#include "envs/env_pool.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "envs/egl_context.h"
#include "envs/env_pool_state.h"
#include "envs/env_worker.h"
#include "envs/task_file.h"
#include "runtime/supervisor.h"

namespace rlvla3 {
namespace {

using Clock = std::chrono::steady_clock;

// Create waits here until every worker has made its envs (or failed).
struct WorkerStartup {
  std::mutex mu;
  std::condition_variable cv;
  int started = 0;
  absl::Status error;
};

// The latency model's release thread: hands each held-back state on at its
// release time.
absl::Status ReleaseDelayedStates(EnvPoolState& state) {
  std::unique_lock<std::mutex> lock(state.delay_mu);
  for (;;) {
    if (state.stopping) return absl::OkStatus();
    if (state.delayed.empty()) {
      state.delay_cv.wait(lock);
      continue;
    }
    const auto [when, id] = state.delayed.top();
    if (Clock::now() < when) {
      state.delay_cv.wait_until(lock, when);
      continue;
    }
    state.delayed.pop();
    state.slots[id]->pending.store(false, std::memory_order_release);
    lock.unlock();
    const auto t0 = Clock::now();
    if (!state.Announce(id)) return absl::OkStatus();  // closed: stopping
    state.phases.handoff_ns.fetch_add(
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0)
            .count(),
        std::memory_order_relaxed);
    lock.lock();
  }
}

// One TaskModel per distinct task (names may repeat in o.tasks).
absl::StatusOr<EnvWorker::TaskModels> LoadTaskModels(const EnvPoolOptions& o) {
  EnvWorker::TaskModels models;
  for (const TaskSpec& spec : o.tasks) {
    if (!spec.toy && models.count(spec.name) == 0) {
      absl::StatusOr<std::shared_ptr<const TaskModel>> m =
          TaskModel::Create(spec, o.env);
      if (!m.ok()) return m.status();
      models[spec.name] = *m;
    }
  }
  return models;
}

// A slot per env (its latency model seeded from o.seed) and an action queue
// per worker.
void MakeSlotsAndQueues(const EnvPoolOptions& o, int threads,
                        EnvPoolState& state) {
  for (int i = 0; i < o.num_envs; ++i) {
    state.slots.push_back(std::make_unique<EnvSlot>());
    state.slots.back()->latency_rng.seed(o.seed + static_cast<uint64_t>(i) +
                                         0x5EEDull);
  }
  for (int w = 0; w < threads; ++w) {
    QueueOptions q;
    q.capacity = static_cast<size_t>((o.num_envs + threads - 1) / threads) + 1;
    q.max_producers = 4;
    state.action_queues.push_back(std::make_unique<BoundedQueue<int>>(q));
  }
}

// EnvWorker::Create with anything it throws (a MuJoCo error, with
// mujoco_errors.h's handler installed) as a status, so StartWorkers always
// hears from every worker.
absl::StatusOr<std::unique_ptr<EnvWorker>> CreateWorker(
    EnvPoolState* state, int w, int threads,
    const EnvWorker::TaskModels& models) {
  try {
    return EnvWorker::Create(state, w, threads, models);
  } catch (const std::exception& e) {
    return absl::InternalError(
        absl::StrCat("env worker ", w, " could not make its envs: ", e.what()));
  }
}

// Each worker makes its envs (and GL context) on its own thread; this returns
// once all have, so `startup` outlives every use of it. On an error the
// workers that did start keep running: the pool's destructor stops them.
absl::Status StartWorkers(Supervisor& supervisor, EnvPoolState& state,
                          int threads, const EnvWorker::TaskModels& models) {
  WorkerStartup startup;
  for (int w = 0; w < threads; ++w) {
    supervisor.Spawn(
        absl::StrCat("env-worker-", w),
        [&startup, &models, state = &state, w, threads]() -> absl::Status {
          absl::StatusOr<std::unique_ptr<EnvWorker>> worker =
              CreateWorker(state, w, threads, models);
          {
            // Notified under the lock: once StartWorkers sees the last
            // worker counted it returns and destroys `startup`, so no worker
            // may still be inside notify_all then (found by TSan).
            std::lock_guard<std::mutex> lock(startup.mu);
            if (!worker.ok() && startup.error.ok())
              startup.error = worker.status();
            ++startup.started;
            startup.cv.notify_all();
          }
          if (!worker.ok()) return worker.status();
          return (*worker)->Run();
        });
  }
  std::unique_lock<std::mutex> lock(startup.mu);
  startup.cv.wait(lock, [&] { return startup.started == threads; });
  return startup.error;
}

}  // namespace

std::string LatencyModel::Describe() const {
  if (!enabled()) return "off";
  return absl::StrFormat("lognormal, mean %.1f ms, cv %.2f", mean_ms, cv);
}

struct EnvPool::Impl {
  explicit Impl(const EnvPoolOptions& o)
      : state(o), supervisor([this] { state.StopAll(); }) {}
  EnvPoolState state;
  Supervisor supervisor;
  bool closed = false;
};

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
  absl::StatusOr<EnvWorker::TaskModels> models = LoadTaskModels(o);
  if (!models.ok()) return models.status();
  const int threads = std::min(o.num_threads, o.num_envs);
  EnvPoolOptions resolved = o;
  resolved.num_threads = threads;
  if (o.env.render) {
    resolved.env.render_backend =
        ResolveRenderBackend(o.env.render_backend, threads);
    if (o.env.readback == Readback::kAuto) {
      resolved.env.readback = resolved.env.render_backend == RenderBackend::kGpu
                                  ? Readback::kBatched
                                  : Readback::kPerImage;
    }
  }
  std::unique_ptr<EnvPool> pool(new EnvPool(resolved));
  EnvPoolState& state = pool->impl_->state;
  MakeSlotsAndQueues(o, threads, state);
  if (absl::Status s =
          StartWorkers(pool->impl_->supervisor, state, threads, *models);
      !s.ok()) {
    return s;  // the destructor stops the workers
  }
  if (o.latency.enabled()) {
    pool->impl_->supervisor.Spawn("env-latency-timer", [state = &state] {
      return ReleaseDelayedStates(*state);
    });
  }
  spdlog::info(
      "env pool: {} envs on {} worker threads, {}x{} cameras ({}); latency "
      "model: {}",
      o.num_envs, threads, o.env.image_width, o.env.image_height,
      o.env.render ? kRenderBackendNames.Name(resolved.env.render_backend)
                   : "not rendered",
      o.latency.Describe());
  // Every env starts ready with its reset observation.
  if (!o.on_ready) {
    for (int i = 0; i < o.num_envs; ++i) {
      if (state.state_queue.Push(i) != QueueStatus::kOk) {
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
    if (impl_->state.slots[id]->pending.load(std::memory_order_acquire)) {
      return absl::InvalidArgumentError(
          absl::StrCat("Send: env ", id, " already has an action"));
    }
  }
  for (size_t k = 0; k < env_ids.size(); ++k) {
    EnvSlot& slot = *impl_->state.slots[env_ids[k]];
    std::copy(actions.begin() + k * kActionDim,
              actions.begin() + (k + 1) * kActionDim, slot.action);
    slot.pending.store(true, std::memory_order_release);
    const int worker = env_ids[k] % options_.num_threads;
    if (impl_->state.action_queues[worker]->Push(env_ids[k]) !=
        QueueStatus::kOk) {
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
    QueueStatus s = impl_->state.state_queue.PopBulk(
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
  while (impl_->state.state_queue.PopBulk(buf, 64, absl::ZeroDuration(), &n) ==
             QueueStatus::kOk &&
         n > 0) {
    env_ids->insert(env_ids->end(), buf, buf + n);
  }
  return absl::OkStatus();
}

const EnvState& EnvPool::state(int env_id) const {
  return impl_->state.slots[env_id]->state;
}

void EnvPool::SetNextReset(int env_id, int init_id) {
  EnvSlot& slot = *impl_->state.slots[env_id];
  slot.next_init = init_id;
  slot.needs_reset = true;
}

void EnvPool::SkipImagesOnNextStep(int env_id) {
  impl_->state.slots[env_id]->skip_images = true;
}

const SimEnv& EnvPool::env(int env_id) const {
  return *impl_->state.slots[env_id]->env;
}

const ManipulationEnv* EnvPool::manipulation_env(int env_id) const {
  return impl_->state.slots[env_id]->manipulation;
}

EnvPoolStats EnvPool::stats() const {
  const EnvPoolState& st = impl_->state;
  EnvPoolStats s;
  s.steps = st.steps.load();
  s.resets = st.resets.load();
  s.episodes_done = st.done.load();
  s.truncations = st.truncated.load();
  s.unstable_resets = st.unstable.load();
  s.invalid_actions = st.invalid.load();
  s.faults = st.faults.load();
  s.step_ms = st.step_ms.Snapshot();
  const int64_t frames = st.phases.frames.load();
  if (frames > 0) {
    const double per = 1e6 * static_cast<double>(frames);
    s.phases.physics_ms =
        static_cast<double>(st.phases.physics_ns.load()) / per;
    s.phases.render_ms = static_cast<double>(st.phases.render_ns.load()) / per;
    s.phases.readback_ms =
        static_cast<double>(st.phases.readback_ns.load()) / per;
    s.handoff_ms = static_cast<double>(st.phases.handoff_ns.load()) / per;
  }
  return s;
}

}  // namespace rlvla3
