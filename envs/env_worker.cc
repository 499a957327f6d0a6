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
#include "envs/toy_env.h"
#include "runtime/steady_clock.h"

namespace rlvla3 {
namespace {

// The contract every env output keeps: image sizes from the options, finite
// proprio.
absl::Status CheckObservation(const Observation& o, const EnvOptions& e) {
  const size_t bytes = static_cast<size_t>(e.image_width) *
                       static_cast<size_t>(e.image_height) * 3;
  const size_t cameras = e.cameras.size();
  if (o.images.size() != bytes * cameras) {
    return absl::InvalidArgumentError(
        absl::StrCat("observation images: ", o.images.size(),
                     " bytes, expected ", bytes * cameras, " ([", cameras, ", ",
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
      sweep_(static_cast<size_t>(std::max(1, state->options.max_sweep))),
      timings_(sweep_.size()) {
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
  auto spec_of = [&o](int i) -> const TaskSpec& {
    return o.tasks[static_cast<size_t>(TaskOfEnv(o, i))];
  };
  // Batched readback: one tile per image of this worker's envs of a task.
  std::map<std::string, int> images;
  for (int i = index; i < o.num_envs; i += workers) {
    images[spec_of(i).name] += static_cast<int>(o.env.cameras.size());
  }
  for (int i = index; i < o.num_envs; i += workers) {
    EnvSlot& slot = *state->slots[i];
    const TaskSpec& spec = spec_of(i);
    if (spec.toy) {
      slot.env = std::make_unique<ToyEnv>(spec, o.env, o.seed, i);
    } else if (absl::Status s =
                   w->MakeManipulationEnv(i, spec.name, models, images);
               !s.ok()) {
      return s;
    }
    slot.state.env_id = i;
    slot.state.obs = &slot.env->observation();
    slot.state.episode_id = slot.env->episode_id();
    slot.state.init_id = slot.env->init_id();
    slot.state.phases = slot.env->phases();
  }
  w->FlushRenderers();  // the envs' first observations
  return w;
}

absl::Status EnvWorker::MakeManipulationEnv(
    int i, const std::string& task, const TaskModels& models,
    const std::map<std::string, int>& images) {
  const EnvPoolOptions& o = options_;
  const std::shared_ptr<const TaskModel>& model = models.at(task);
  std::shared_ptr<Renderer> renderer;
  if (o.env.render) {
    std::shared_ptr<Renderer>& shared = renderers_[task];
    if (shared == nullptr) {
      absl::StatusOr<std::unique_ptr<Renderer>> made = Renderer::Create(
          model->model(), o.env.image_width, o.env.image_height,
          o.env.readback == Readback::kBatched ? images.at(task) : 1);
      if (!made.ok()) return made.status();
      shared = *std::move(made);
    }
    renderer = shared;
  }
  absl::StatusOr<std::unique_ptr<ManipulationEnv>> env =
      ManipulationEnv::Create(model, o.env, o.seed, i, renderer);
  if (!env.ok()) return env.status();
  EnvSlot& slot = *state_->slots[i];
  slot.manipulation = env->get();
  slot.env = *std::move(env);
  return absl::OkStatus();
}

int64_t EnvWorker::FlushRenderers() {
  RenderTimes t;
  for (auto& [task, renderer] : renderers_) renderer->Flush(&t);
  return t.readback_ns;
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
    for (size_t k = 0; k < n; ++k) timings_[k] = StepEnv(sweep_[k]);
    // One readback per renderer for the whole sweep, shared by its steps.
    const int64_t share_ns =
        FlushRenderers() / static_cast<int64_t>(std::max<size_t>(n, 1));
    for (size_t k = 0; k < n; ++k) {
      Release(sweep_[k], FinishStep(sweep_[k], timings_[k], share_ns));
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
  SimEnv& env = *slot.env;
  const std::optional<FaultKind> injected =
      options_.faults.At(options_.first_env_id + id, ++slot.stepped);
  if (injected == FaultKind::kThrow) {
    throw std::runtime_error("injected fault (env.faults)");
  }
  if (injected == FaultKind::kHang) {
    std::this_thread::sleep_for(
        std::chrono::duration<double>(options_.faults.hang_s));
  }
  if (slot.skip_images) env.SkipImagesOnNextStep();  // cleared by StepEnv
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
      slot.damaged.images.resize(slot.damaged.images.size() / 2);
    } else {
      slot.damaged.proprio[0] = std::numeric_limits<float>::quiet_NaN();
    }
    out = &slot.damaged;
  }
  return CheckObservation(*out, options_.env);
}

EnvWorker::StepTiming EnvWorker::StepEnv(int id) {
  EnvSlot& slot = *state_->slots[id];
  SimEnv& env = *slot.env;
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
  slot.skip_images = false;  // a reset or a crash drew, or owes, a new frame
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
  return {t0, Clock::now()};
}

EnvWorker::Clock::time_point EnvWorker::FinishStep(int id,
                                                   const StepTiming& timing,
                                                   int64_t readback_share_ns) {
  EnvSlot& slot = *state_->slots[id];
  StepPhases phases = slot.env->phases();
  phases.readback_ms += static_cast<double>(readback_share_ns) / 1e6;
  slot.state.phases = phases;
  state_->phases.Add(phases);
  const auto ended = timing.ended + std::chrono::nanoseconds(readback_share_ns);
  slot.state.step_ms =
      std::chrono::duration<double, std::milli>(ended - timing.began).count();
  slot.state.step_begin_ns = timing.began.time_since_epoch().count();
  slot.state.step_end_ns = ended.time_since_epoch().count();
  state_->step_ms.Observe(slot.state.step_ms);
  return timing.began;
}

}  // namespace rlvla3
