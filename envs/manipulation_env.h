// File: envs/manipulation_env.h
// -----------------------------------------------------------------------------
// ManipulationEnv: one tabletop task episode after another. A TaskModel (the
// compiled, immutable mjModel of a task plus its controller and goal checker)
// is shared by every env of that task; each env owns its mjData, its
// observation buffers and, when rendering, a Renderer.
//
// Control as in LIBERO: a 7-D action in [-1, 1] at 20 Hz (25 physics steps of
// 2 ms each). Observation: the cameras of EnvOptions::cameras as RGB (uint8
// HWC), 8-D proprio
// (eef position, axis-angle, two finger positions), the instruction. Reward:
// sparse success (1 on the step the goal first holds), or shaped. An episode
// ends on success (done) or at max_steps / physics instability (truncated).
//
// Example:
//   auto task = TaskModel::Create(*FindTask("lift_the_red_cube"), {});
//   auto env = ManipulationEnv::Create(*task, {}, /*seed=*/0, /*env_id=*/3);
//   (*env)->Reset();                         // init state from seed + env_id
//   absl::StatusOr<StepResult> r = (*env)->Step(action);   // 7 floats
//   const Observation& obs = (*env)->observation();
// -----------------------------------------------------------------------------
#ifndef RLVLA3_ENVS_MANIPULATION_ENV_H_
#define RLVLA3_ENVS_MANIPULATION_ENV_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "envs/arm_controller.h"
#include "envs/egl_context.h"
#include "envs/mujoco_handles.h"
#include "envs/renderer.h"
#include "envs/sim_env.h"
#include "envs/task.h"
#include "envs/task_progress.h"
#include "runtime/render_choices.h"

namespace rlvla3 {

// How a step's images come back from its renderer (envs/renderer.h):
//   kPerImage  each image is read back as it is drawn, before Step returns;
//   kBatched   drawn, and read back at the renderer's next Flush: the env
//              pool flushes once per sweep, every env's images together;
//   kAuto      the env pool's choice: kBatched on a GPU's EGL (a readback
//              waits for the GPU: one wait per sweep instead of two per
//              frame), kPerImage on Mesa llvmpipe (batched is slower
//              there; docs/experiments.md and docs/simulators.md, "Rendering").
// Readback and its names: runtime/render_choices.h.

struct EnvOptions {
  int image_width = 128;
  int image_height = 128;
  // The scene's cameras an observation holds, in order (each task's model
  // must have them: the built-in scene's agentview, wrist and sideview, or a
  // camera of the task file's scene_mjcf).
  std::vector<std::string> cameras = {"agentview", "wrist"};
  bool render = true;         // false: images stay zero (physics-only use)
  int max_episode_steps = 0;  // the horizon (0: the task's max_steps)
  // Reset() without an init_id draws from init_first .. init_first +
  // init_count - 1 (the scripted experts' demos: sft.init_state*).
  int init_first = 0;
  int init_count = 50;
  // Who renders (envs/egl_context.h); the env pool resolves kAuto for its
  // worker count.
  RenderBackend render_backend = RenderBackend::kAuto;
  // kBatched: a step's images land in observation() at the renderer's next
  // Flush, not before Step returns (kAuto counts as kPerImage here).
  Readback readback = Readback::kAuto;
  int physics_substeps = 25;  // per control step: 500 Hz physics, 20 Hz control
  bool shaped_reward = false;  // add -0.1 * distance(eef, goal object) per step
  // > 0: add this x the step's change of the task's progress potential
  // (envs/task_progress.h) to the success reward; below 1/2, every success
  // outranks every failure.
  double progress_reward = 0;
  ArmControllerOptions controller;
};

// The immutable part of a task, shared across envs and threads.
class TaskModel {
 public:
  static absl::StatusOr<std::shared_ptr<const TaskModel>> Create(
      const TaskSpec& task, const EnvOptions& options);
  const mjModel* model() const { return model_.get(); }
  const TaskSpec& task() const { return task_; }
  // The model's ids of cameras `names`, in order; a camera the scene lacks is
  // an error naming the task, the camera and the cameras the scene has.
  absl::StatusOr<std::vector<int>> CameraIds(
      const std::vector<std::string>& names) const;
  const ArmController& controller() const { return controller_; }
  const GoalChecker& goal() const { return goal_; }
  // qpos address of each placed object's free joint, in placement order.
  const std::vector<int>& object_qpos() const { return object_qpos_; }
  int drawer_qpos() const { return drawer_qpos_; }
  int goal_body() const { return goal_body_; }
  // The graded outcome (EnvOptions::progress_reward > 0), else null.
  const TaskProgress* progress() const {
    return progress_ ? &*progress_ : nullptr;
  }

 private:
  TaskModel(TaskSpec task, MjModelPtr model, ArmController c, GoalChecker g)
      : task_(std::move(task)),
        model_(std::move(model)),
        controller_(c),
        goal_(std::move(g)) {}
  TaskSpec task_;
  MjModelPtr model_;
  ArmController controller_;
  GoalChecker goal_;
  std::vector<int> object_qpos_;
  int drawer_qpos_ = -1;
  int goal_body_ = -1;
  std::optional<TaskProgress> progress_;
};

class ManipulationEnv final : public SimEnv {
 public:
  // Rendering needs a current EGL context on the calling thread.
  // Envs of one task stepped on the same thread may share `renderer`; if it
  // is null and options.render is set, the env makes its own.
  static absl::StatusOr<std::unique_ptr<ManipulationEnv>> Create(
      std::shared_ptr<const TaskModel> task, const EnvOptions& options,
      uint64_t seed, int env_id, std::shared_ptr<Renderer> renderer = nullptr);

  // Starts an episode from a random one of the task's initial states (drawn
  // from seed + env_id), or from `init_id`.
  void Reset() override;
  void Reset(int init_id) override;
  // Advances one control step. An action of the wrong size or with NaN/Inf is
  // rejected (InvalidArgument naming the env), and nothing is stepped.
  absl::StatusOr<StepResult> Step(absl::Span<const float> action) override;

  void SkipImagesOnNextStep() override { skip_images_ = true; }
  const Observation& observation() const override { return obs_; }
  const StepPhases& phases() const override { return phases_; }
  const TaskModel& task() const { return *task_; }
  const mjModel* model() const { return task_->model(); }
  mjData* data() { return data_.get(); }
  const mjData* data() const { return data_.get(); }
  int env_id() const { return env_id_; }
  int init_id() const override { return init_id_; }
  int step_count() const override { return step_; }
  uint64_t episode_id() const override { return episode_; }

 private:
  ManipulationEnv(std::shared_ptr<const TaskModel> task, const EnvOptions& o,
                  MjDataPtr data, uint64_t seed, int env_id);
  // Fills the observation; `began_ns`: when the step's physics began;
  // `images`: draw the cameras (else they keep the last drawn frame).
  void Observe(int64_t began_ns, bool images = true);
  bool Unstable() const;

  std::shared_ptr<const TaskModel> task_;
  EnvOptions options_;
  MjDataPtr data_;
  std::shared_ptr<Renderer> renderer_;
  std::vector<int> cameras_;  // model camera ids, EnvOptions::cameras order
  std::mt19937_64 rng_;
  int env_id_;
  int init_id_ = 0;
  int step_ = 0;
  uint64_t episode_ = 0;
  bool episode_started_ = false;
  bool skip_images_ = false;  // SkipImagesOnNextStep, for the next Step
  Observation obs_;
  StepPhases phases_;
  TaskProgress::Start progress_start_;  // the episode's (progress_reward)
  double potential_ = 0;                // after the last step
};

}  // namespace rlvla3

#endif  // RLVLA3_ENVS_MANIPULATION_ENV_H_
