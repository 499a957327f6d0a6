// File: envs/scripted_expert.h
// -----------------------------------------------------------------------------
// A scripted expert for every task of the suite, acting through the same 7-D
// action interface as a policy (it reads privileged simulator state: object
// and handle positions). Used to prove each task solvable, and to collect
// demonstrations for SFT. Pick-and-place goals (on, in, lifted) run
// approach -> descend -> grasp -> lift -> carry -> lower -> release; drawer
// goals grasp the handle and pull, or push the front closed.
//
// Example:
//   absl::StatusOr<ScriptedExpert> expert =
//   ScriptedExpert::Create(env->task()); expert->Reset(); float a[7];
//   expert->Act(*env, a);
//   env->Step(a);
// -----------------------------------------------------------------------------
#ifndef RLVLA3_ENVS_SCRIPTED_EXPERT_H_
#define RLVLA3_ENVS_SCRIPTED_EXPERT_H_

#include <array>

#include "absl/status/statusor.h"
#include "envs/manipulation_env.h"

namespace rlvla3 {

class ScriptedExpert {
 public:
  static absl::StatusOr<ScriptedExpert> Create(const TaskModel& task);

  // Starts a new episode's script.
  void Reset();
  // Writes the next action (7 floats in [-1, 1]) for the env's current state.
  void Act(const ManipulationEnv& env, float* action);
  // Index of the current phase of the script (for tests and debugging).
  int phase() const { return phase_; }

 private:
  enum class Plan { kPickPlace, kLift, kOpenDrawer, kCloseDrawer };

  ScriptedExpert() = default;
  // Moves towards `target` with gripper command `grip` and hand yaw `yaw`;
  // returns true when within `tol` (m).
  bool MoveTo(const ManipulationEnv& env, const double target[3], double yaw,
              float grip, double tol, float* action) const;
  void Advance();
  // Act's pieces, one per stretch of the script; `timeout` says the current
  // phase has run out of steps. Phases 0-3 of the pick plans (hover, descend,
  // grasp, lift); returns false, writing nothing, from phase 4 on.
  bool GraspAndLift(const ManipulationEnv& env, bool timeout, float* action);
  // Phases 4 on of kPickPlace: carry, lower, release, retreat.
  void Place(const ManipulationEnv& env, bool timeout, float* action);
  void OpenDrawer(const ManipulationEnv& env, bool timeout, float* action);
  void CloseDrawer(const ManipulationEnv& env, bool timeout, float* action);

  Plan plan_ = Plan::kPickPlace;
  int object_body_ = -1;  // the object to grasp
  int target_body_ = -1;  // where to put it (kPickPlace)
  int handle_site_ = -1;  // drawer handle
  double place_height_ =
      0.0;  // eef height above the target body origin when releasing
  int phase_ = 0;
  int phase_steps_ = 0;
  double grasp_yaw_ = 0.0;
};

}  // namespace rlvla3

#endif  // RLVLA3_ENVS_SCRIPTED_EXPERT_H_
