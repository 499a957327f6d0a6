#include "envs/toy_env.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace rlvla3 {

ToyEnv::ToyEnv(const TaskSpec& task, const EnvOptions& options, uint64_t seed,
               int env_id)
    : task_(task),
      horizon_(options.max_episode_steps > 0 ? options.max_episode_steps
                                             : task.max_steps),
      rng_(seed * 1000003ull + static_cast<uint64_t>(env_id)) {
  const size_t bytes = static_cast<size_t>(options.image_width) *
                       static_cast<size_t>(options.image_height) * 3;
  obs_.images.assign(bytes * options.cameras.size(), 0);
  obs_.instruction = &task_.instruction;
  Reset();
}

void ToyEnv::Reset() {
  Reset(static_cast<int>(rng_() % static_cast<uint64_t>(kInitStatesPerTask)));
}

void ToyEnv::Reset(int init_id) {
  init_id_ = init_id;
  // 64 goals spread over [-0.9, 0.9], visited in a scrambled order.
  const uint32_t k = (static_cast<uint32_t>(init_id) * 37u) % 64u;
  goal_ = -0.9f + 1.8f * static_cast<float>(k) / 63.0f;
  x_ = 0;
  step_ = 0;
  if (started_) ++episode_;
  started_ = true;
  Observe();
}

absl::StatusOr<StepResult> ToyEnv::Step(absl::Span<const float> action) {
  if (action.size() != kActionDim) {
    return absl::InvalidArgumentError(absl::StrCat(
        "toy env: action has ", action.size(), " values, expected 7"));
  }
  for (size_t i = 0; i < action.size(); ++i) {
    if (!std::isfinite(action[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat("toy env: action[", i, "] is ", action[i]));
    }
  }
  x_ += kToyStep * std::fmax(-1.0f, std::fmin(1.0f, action[0]));
  ++step_;
  StepResult r;
  r.success = std::fabs(x_ - goal_) <= kToyTolerance;
  r.done = r.success;
  r.reward = r.success ? 1.0f : 0.0f;
  r.truncated = !r.done && step_ >= horizon_;
  Observe();
  return r;
}

void ToyEnv::Observe() {
  obs_.proprio[0] = x_;
  obs_.proprio[1] = goal_;
  obs_.proprio[2] = goal_ - x_;
  for (int i = 3; i < kProprioDim; ++i) obs_.proprio[i] = 0;
}

}  // namespace rlvla3
