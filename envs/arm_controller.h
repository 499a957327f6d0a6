// File: envs/arm_controller.h
// -----------------------------------------------------------------------------
// ArmController turns a LIBERO-style 7-D action into joint servo targets:
// a[0:3] is a delta end-effector position, a[3:6] a delta rotation (axis-angle,
// world frame), a[6] the gripper (-1 open, +1 closed), all in [-1, 1] and
// scaled by the options. Joint targets come from one damped-least-squares IK
// step on MuJoCo's site Jacobian (mj_jacSite), with a null-space pull towards
// the home posture; position actuators track them at the physics rate while
// the controller cancels gravity and Coriolis forces (qfrc_bias).
//
// Example:
//   ArmController arm(model, {});
//   arm.ResetToHome(model, data);
//   arm.SetAction(model, data, action);          // once per control step (20
//   Hz) for (int i = 0; i < 25; ++i) { arm.Compensate(model, data);
//   mj_step(model, data); }
// -----------------------------------------------------------------------------
#ifndef RLVLA3_ENVS_ARM_CONTROLLER_H_
#define RLVLA3_ENVS_ARM_CONTROLLER_H_

#include <mujoco/mujoco.h>

#include <array>

#include "absl/status/statusor.h"

namespace rlvla3 {

struct ArmControllerOptions {
  double max_delta_pos = 0.05;   // m per control step at |a| = 1
  double max_delta_rot = 0.5;    // rad per control step at |a| = 1
  double damping = 0.05;         // DLS damping (lambda)
  double nullspace_gain = 0.05;  // pull towards the home posture
  double gripper_open = 0.04;    // finger servo target when open (m)
  double gripper_closed =
      -0.02;  // finger servo target when closed (beyond contact: squeezes)
  // Home pose of the end effector: above the table centre, pointing down.
  std::array<double, 3> home_pos = {-0.12, 0.0, 0.25};
};

class ArmController {
 public:
  // Resolves joint, actuator and site ids of the scene in `m` (envs/scene.h).
  static absl::StatusOr<ArmController> Create(const mjModel* m,
                                              const ArmControllerOptions& o);

  // Puts the arm at the home posture (solved once by IK), gripper open, and
  // sets the servo targets there. Calls mj_forward.
  void ResetToHome(const mjModel* m, mjData* d) const;
  // Sets servo targets for the next control period from `action` (7 floats).
  // Needs up-to-date kinematics (call after mj_forward or a step).
  void SetAction(const mjModel* m, mjData* d, const float* action) const;
  // Gravity/Coriolis compensation for the arm and fingers; before each mj_step.
  void Compensate(const mjModel* m, mjData* d) const;

  // End-effector position (world, m) and orientation (quaternion w,x,y,z).
  void EefPose(const mjData* d, double pos[3], double quat[4]) const;
  // Finger opening: the two finger slide positions (m).
  void FingerPositions(const mjData* d, double out[2]) const;
  int eef_site() const { return eef_site_; }
  const ArmControllerOptions& options() const { return o_; }

 private:
  ArmController() = default;
  // Servo targets q + dq that move the eef towards (pos, quat).
  void SolveIk(const mjModel* m, mjData* d, const double pos[3],
               const double quat[4], double* q_target) const;

  ArmControllerOptions o_;
  int eef_site_ = -1;
  std::array<int, 7> qpos_adr_{};
  std::array<int, 7> dof_adr_{};
  std::array<int, 7> act_{};
  std::array<int, 2> finger_qpos_{};
  std::array<int, 2> finger_dof_{};
  std::array<int, 2> finger_act_{};
  std::array<double, 7> home_q_{};
  std::array<double, 4> down_quat_ = {0, 1, 0,
                                      0};  // hand z down, hand x forward
};

}  // namespace rlvla3

#endif  // RLVLA3_ENVS_ARM_CONTROLLER_H_
