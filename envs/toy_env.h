// File: envs/toy_env.h
// -----------------------------------------------------------------------------
// ToyEnv ("toy_reach"): RL's sanity env, a few lines of state and no MuJoCo.
// A point x on a line starts at 0; initial state k puts the goal g at one of
// 64 points in [-0.9, 0.9]. Each control step moves x by kToyStep * action[0]
// (the other six dimensions are ignored) and the episode succeeds once |x - g|
// is within kToyTolerance (reward 1, done); it is truncated at the horizon
// (EnvOptions::max_episode_steps, else the task's max_steps: 4). Proprio is
// (x, g, g - x, 0...); the images are blank. A uniform random policy succeeds
// in roughly 20% of episodes; one that acts on g - x in 100%.
//
// Example (through the env pool and `train`, from scratch):
//   rl-vla3 train --config configs/toy_reach.yaml --mode async
// -----------------------------------------------------------------------------
#ifndef RLVLA3_ENVS_TOY_ENV_H_
#define RLVLA3_ENVS_TOY_ENV_H_

#include <cstdint>
#include <memory>
#include <random>

#include "envs/manipulation_env.h"
#include "envs/sim_env.h"
#include "envs/task.h"

namespace rlvla3 {

inline constexpr float kToyStep = 0.5f;
inline constexpr float kToyTolerance = 0.1f;

class ToyEnv final : public SimEnv {
 public:
  // Images of options.image_width x image_height stay blank.
  ToyEnv(const TaskSpec& task, const EnvOptions& options, uint64_t seed,
         int env_id);

  void Reset() override;
  void Reset(int init_id) override;
  absl::StatusOr<StepResult> Step(absl::Span<const float> action) override;
  const Observation& observation() const override { return obs_; }
  const StepPhases& phases() const override { return phases_; }
  int init_id() const override { return init_id_; }
  int step_count() const override { return step_; }
  uint64_t episode_id() const override { return episode_; }
  float goal() const { return goal_; }

 private:
  void Observe();

  TaskSpec task_;
  int horizon_;
  std::mt19937_64 rng_;
  float x_ = 0, goal_ = 0;
  int init_id_ = 0, step_ = 0;
  uint64_t episode_ = 0;
  bool started_ = false;
  Observation obs_;
  StepPhases phases_;
};

}  // namespace rlvla3

#endif  // RLVLA3_ENVS_TOY_ENV_H_
