#include "envs/env_worker.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "runtime/steady_clock.h"

namespace rlvla3 {
namespace {

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

// The latency model's lognormal, parameterised by its mean and cv.
std::lognormal_distribution<double> LatencyOf(const LatencyModel& l) {
  if (!l.enabled()) return std::lognormal_distribution<double>(0.0, 0.0);
  const double sigma2 = std::log(1.0 + l.cv * l.cv);
  return std::lognormal_distribution<double>(std::log(l.mean_ms) - sigma2 / 2,
                                             std::sqrt(sigma2));
}

}  // namespace

EnvWorker::EnvWorker(EnvPoolState* state, int index)
    : state_(state),
      options_(state->options),
      index_(index),
      latency_(LatencyOf(state->options.latency)),
      sweep_(static_cast<size_t>(std::max(1, state->options.max_sweep))) {
  ready_.reserve(sweep_.size());
}

absl::StatusOr<std::unique_ptr<EnvWorker>> EnvWorker::Create(
    EnvPoolState* state, int index, int workers, const TaskModels& models) {
  std::unique_ptr<EnvWorker> w(new EnvWorker(state, index));
  const EnvPoolOptions& o = state->options;
  if (o.env.render) {
    absl::StatusOr<std::unique_ptr<EglContext>> gl =
        EglContext::Create(o.env.render_backend);
    if (!gl.ok()) return gl.status();
    w->gl_ = *std::move(gl);
  }
  for (int i = index; i < o.num_envs; i += workers) {
    const std::string& task =
        o.tasks[static_cast<size_t>(i) % o.tasks.size()].name;
    const std::shared_ptr<const TaskModel>& model = models.at(task);
    std::shared_ptr<Renderer> renderer;
    if (o.env.render) {
      std::shared_ptr<Renderer>& shared = w->renderers_[task];
      if (shared == nullptr) {
        absl::StatusOr<std::unique_ptr<Renderer>> made = Renderer::Create(
            model->model(), o.env.image_width, o.env.image_height);
        if (!made.ok()) return made.status();
        shared = *std::move(made);
      }
      renderer = shared;
    }
    absl::StatusOr<std::unique_ptr<ManipulationEnv>> env =
        ManipulationEnv::Create(model, o.env, o.seed, i, renderer);
    if (!env.ok()) return env.status();
    EnvSlot& slot = *state->slots[i];
    slot.env = *std::move(env);
    slot.state.env_id = i;
    slot.state.obs = &slot.env->observation();
    slot.state.episode_id = slot.env->episode_id();
    slot.state.init_id = slot.env->init_id();
    slot.state.phases = slot.env->phases();
  }
  return w;
}

absl::Status EnvWorker::Run() {
  BoundedQueue<int>& actions = *state_->action_queues[index_];
  for (;;) {
    size_t n = 0;
    if (actions.PopBulk(sweep_.data(), sweep_.size(), absl::InfiniteDuration(),
                        &n) != QueueStatus::kOk) {
      return absl::OkStatus();
    }
    ready_.clear();
    for (size_t k = 0; k < n; ++k) {
      const int id = sweep_[k];
      Release(id, StepEnv(id));
    }
    const int64_t t0 = SteadyNowNs();
    for (int id : ready_) {
      state_->slots[id]->pending.store(false, std::memory_order_release);
      if (!state_->Announce(id)) return absl::OkStatus();
    }
    state_->phases.handoff_ns.fetch_add(SteadyNowNs() - t0,
                                        std::memory_order_relaxed);
  }
}

void EnvWorker::Release(int id, Clock::time_point began) {
  if (!options_.latency.enabled()) {
    ready_.push_back(id);
    return;
  }
  EnvSlot& slot = *state_->slots[id];
  const auto release = began + std::chrono::microseconds(static_cast<int64_t>(
                                   latency_(slot.latency_rng) * 1000.0));
  {
    std::lock_guard<std::mutex> lock(state_->delay_mu);
    state_->delayed.emplace(release, id);
  }
  state_->delay_cv.notify_one();
}

void EnvWorker::ResetEnv(EnvSlot& slot) {
  if (slot.next_init >= 0) {
    slot.env->Reset(slot.next_init);
    slot.next_init = -1;
  } else {
    slot.env->Reset();
  }
  slot.needs_reset = false;
  slot.state.result = StepResult{};
  state_->resets.fetch_add(1, std::memory_order_relaxed);
}

absl::Status EnvWorker::StepAndCheck(int id) {
  EnvSlot& slot = *state_->slots[id];
  ManipulationEnv& env = *slot.env;
  const std::optional<FaultKind> injected =
      options_.faults.At(options_.first_env_id + id, ++slot.stepped);
  if (injected == FaultKind::kThrow) {
    throw std::runtime_error("injected fault (env.faults)");
  }
  if (injected == FaultKind::kHang) {
    std::this_thread::sleep_for(
        std::chrono::duration<double>(options_.faults.hang_s));
  }
  absl::StatusOr<StepResult> r =
      env.Step(absl::MakeConstSpan(slot.action, kActionDim));
  if (!r.ok()) {
    slot.state.error = r.status();
    state_->invalid.fetch_add(1, std::memory_order_relaxed);
    return absl::OkStatus();
  }
  slot.state.result = *r;
  state_->steps.fetch_add(1, std::memory_order_relaxed);
  if (r->done || r->truncated) slot.needs_reset = true;
  if (r->done) state_->done.fetch_add(1, std::memory_order_relaxed);
  if (r->truncated && !r->unstable)
    state_->truncated.fetch_add(1, std::memory_order_relaxed);
  if (r->unstable) {
    state_->unstable.fetch_add(1, std::memory_order_relaxed);
    spdlog::warn(
        "env {}: physics became unstable at step {}; episode truncated",
        options_.first_env_id + id, env.step_count());
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
  return CheckObservation(*out, options_.env);
}

EnvWorker::Clock::time_point EnvWorker::StepEnv(int id) {
  EnvSlot& slot = *state_->slots[id];
  ManipulationEnv& env = *slot.env;
  const auto t0 = Clock::now();
  slot.state.error = absl::OkStatus();
  absl::Status fault;
  try {
    if (slot.needs_reset) {
      ResetEnv(slot);
    } else {
      fault = StepAndCheck(id);
    }
  } catch (const std::exception& e) {
    fault = absl::InternalError(absl::StrCat("the env crashed: ", e.what()));
  }
  const double deadline_s = options_.step_deadline_s;
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
    state_->faults.fetch_add(1, std::memory_order_relaxed);
    spdlog::warn("env {}: {}; episode ended, env reset",
                 options_.first_env_id + id, fault.ToString());
  }
  slot.state.step = env.step_count();
  slot.state.episode_id = env.episode_id();
  slot.state.init_id = env.init_id();
  slot.state.phases = env.phases();
  state_->phases.Add(env.phases());
  const auto t1 = Clock::now();
  slot.state.step_ms =
      std::chrono::duration<double, std::milli>(t1 - t0).count();
  slot.state.step_begin_ns = t0.time_since_epoch().count();
  slot.state.step_end_ns = t1.time_since_epoch().count();
  state_->step_ms.Observe(slot.state.step_ms);
  return t0;
}

}  // namespace rlvla3
