#include "envs/arm_controller.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "envs/mujoco_handles.h"
#include "envs/scene.h"

namespace rlvla3 {
namespace {

constexpr int kHomeIkIterations = 300;
constexpr const char* kArmJointNames[7] = {"j1", "j2", "j3", "j4",
                                           "j5", "j6", "j7"};
constexpr const char* kArmActNames[7] = {"a1", "a2", "a3", "a4",
                                         "a5", "a6", "a7"};

double Clamp1(float a) {
  return std::isfinite(a) ? std::clamp<double>(a, -1.0, 1.0) : 0.0;
}

}  // namespace

absl::StatusOr<ArmController> ArmController::Create(
    const mjModel* m, const ArmControllerOptions& o) {
  ArmController c;
  c.o_ = o;
  c.eef_site_ = mj_name2id(m, mjOBJ_SITE, kEefSite);
  if (c.eef_site_ < 0)
    return absl::InvalidArgumentError("scene has no 'eef' site");
  for (int i = 0; i < 7; ++i) {
    const int j = mj_name2id(m, mjOBJ_JOINT, kArmJointNames[i]);
    const int a = mj_name2id(m, mjOBJ_ACTUATOR, kArmActNames[i]);
    if (j < 0 || a < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("scene has no arm joint ", kArmJointNames[i]));
    }
    c.qpos_adr_[i] = m->jnt_qposadr[j];
    c.dof_adr_[i] = m->jnt_dofadr[j];
    c.act_[i] = a;
  }
  const char* fingers[2] = {"finger_left", "finger_right"};
  const char* grips[2] = {"grip_left", "grip_right"};
  for (int i = 0; i < 2; ++i) {
    const int j = mj_name2id(m, mjOBJ_JOINT, fingers[i]);
    const int a = mj_name2id(m, mjOBJ_ACTUATOR, grips[i]);
    if (j < 0 || a < 0)
      return absl::InvalidArgumentError("scene has no gripper");
    c.finger_qpos_[i] = m->jnt_qposadr[j];
    c.finger_dof_[i] = m->jnt_dofadr[j];
    c.finger_act_[i] = a;
  }
  // Solve the home posture once, kinematically, from a bent seed posture.
  absl::StatusOr<MjDataPtr> scratch = MakeData(m);
  if (!scratch.ok()) return scratch.status();
  mjData* d = scratch->get();
  const double seed[7] = {0, 0.5, 0, 1.5, 0, 1.1, 0};
  for (int i = 0; i < 7; ++i) d->qpos[c.qpos_adr_[i]] = seed[i];
  c.home_q_ = {seed[0], seed[1], seed[2], seed[3], seed[4], seed[5], seed[6]};
  double q_target[7];
  for (int it = 0; it < kHomeIkIterations; ++it) {
    mj_kinematics(m, d);
    mj_comPos(m, d);
    c.SolveIk(m, d, o.home_pos.data(), c.down_quat_.data(), q_target);
    for (int i = 0; i < 7; ++i) d->qpos[c.qpos_adr_[i]] = q_target[i];
  }
  for (int i = 0; i < 7; ++i) c.home_q_[i] = d->qpos[c.qpos_adr_[i]];
  mj_kinematics(m, d);
  const double* p = d->site_xpos + 3 * c.eef_site_;
  const double err = std::hypot(p[0] - o.home_pos[0], p[1] - o.home_pos[1],
                                p[2] - o.home_pos[2]);
  if (err > 0.01) {
    return absl::InternalError(
        absl::StrCat("home posture unreachable: IK error ", err, " m"));
  }
  return c;
}

void ArmController::SolveIk(const mjModel* m, mjData* d, const double pos[3],
                            const double quat[4], double* q_target) const {
  const int nv = m->nv;
  std::vector<mjtNum> jacp(3 * nv), jacr(3 * nv);
  mj_jacSite(m, d, jacp.data(), jacr.data(), eef_site_);
  // 6x7 Jacobian of the arm dofs.
  double J[6][7];
  for (int i = 0; i < 7; ++i) {
    for (int r = 0; r < 3; ++r) {
      J[r][i] = jacp[r * nv + dof_adr_[i]];
      J[r + 3][i] = jacr[r * nv + dof_adr_[i]];
    }
  }
  // Task-space error: position, and rotation as the axis-angle of q_des * q^-1.
  double e[6];
  const double* p = d->site_xpos + 3 * eef_site_;
  for (int r = 0; r < 3; ++r) e[r] = pos[r] - p[r];
  double cur[4], inv[4], diff[4];
  mju_mat2Quat(cur, d->site_xmat + 9 * eef_site_);
  mju_negQuat(inv, cur);
  mju_mulQuat(diff, quat, inv);
  if (diff[0] < 0) {
    for (double& v : diff) v = -v;
  }
  mju_quat2Vel(e + 3, diff, 1.0);
  // dq = J^T (J J^T + lambda^2 I)^-1 e
  double A[36];
  for (int r = 0; r < 6; ++r) {
    for (int c = 0; c < 6; ++c) {
      double s = 0;
      for (int i = 0; i < 7; ++i) s += J[r][i] * J[c][i];
      A[r * 6 + c] = s + (r == c ? o_.damping * o_.damping : 0.0);
    }
  }
  mju_cholFactor(A, 6, 1e-10);
  double y[6];
  mju_cholSolve(y, A, e, 6);
  double dq[7];
  for (int i = 0; i < 7; ++i) {
    dq[i] = 0;
    for (int r = 0; r < 6; ++r) dq[i] += J[r][i] * y[r];
  }
  // Null-space pull towards home: (I - J^T (J J^T)^-1 J) k (q_home - q).
  double z[7], Jz[6], w[6];
  for (int i = 0; i < 7; ++i)
    z[i] = o_.nullspace_gain * (home_q_[i] - d->qpos[qpos_adr_[i]]);
  for (int r = 0; r < 6; ++r) {
    Jz[r] = 0;
    for (int i = 0; i < 7; ++i) Jz[r] += J[r][i] * z[i];
  }
  mju_cholSolve(w, A, Jz, 6);
  for (int i = 0; i < 7; ++i) {
    double proj = 0;
    for (int r = 0; r < 6; ++r) proj += J[r][i] * w[r];
    q_target[i] = d->qpos[qpos_adr_[i]] + dq[i] + z[i] - proj;
    const int jnt = m->dof_jntid[dof_adr_[i]];
    if (m->jnt_limited[jnt]) {
      q_target[i] = std::clamp(q_target[i], m->jnt_range[2 * jnt],
                               m->jnt_range[2 * jnt + 1]);
    }
  }
}

void ArmController::ResetToHome(const mjModel* m, mjData* d) const {
  for (int i = 0; i < 7; ++i) {
    d->qpos[qpos_adr_[i]] = home_q_[i];
    d->qvel[dof_adr_[i]] = 0;
    d->ctrl[act_[i]] = home_q_[i];
  }
  for (int i = 0; i < 2; ++i) {
    d->qpos[finger_qpos_[i]] = o_.gripper_open;
    d->qvel[finger_dof_[i]] = 0;
    d->ctrl[finger_act_[i]] = o_.gripper_open;
  }
  mj_forward(m, d);
}

void ArmController::SetAction(const mjModel* m, mjData* d,
                              const float* action) const {
  double pos[3], quat[4];
  EefPose(d, pos, quat);
  for (int r = 0; r < 3; ++r) pos[r] += Clamp1(action[r]) * o_.max_delta_pos;
  double rotvec[3] = {Clamp1(action[3]) * o_.max_delta_rot,
                      Clamp1(action[4]) * o_.max_delta_rot,
                      Clamp1(action[5]) * o_.max_delta_rot};
  double dquat[4], target[4];
  const double angle = mju_norm3(rotvec);
  if (angle > 1e-9) {
    double axis[3] = {rotvec[0] / angle, rotvec[1] / angle, rotvec[2] / angle};
    mju_axisAngle2Quat(dquat, axis, angle);
  } else {
    dquat[0] = 1;
    dquat[1] = dquat[2] = dquat[3] = 0;
  }
  mju_mulQuat(target, dquat, quat);
  double q_target[7];
  SolveIk(m, d, pos, target, q_target);
  for (int i = 0; i < 7; ++i) d->ctrl[act_[i]] = q_target[i];
  const double g = Clamp1(action[6]) > 0 ? o_.gripper_closed : o_.gripper_open;
  for (int i = 0; i < 2; ++i) d->ctrl[finger_act_[i]] = g;
}

void ArmController::Compensate(const mjModel* m, mjData* d) const {
  for (int i = 0; i < 7; ++i)
    d->qfrc_applied[dof_adr_[i]] = d->qfrc_bias[dof_adr_[i]];
  for (int i = 0; i < 2; ++i)
    d->qfrc_applied[finger_dof_[i]] = d->qfrc_bias[finger_dof_[i]];
}

void ArmController::EefPose(const mjData* d, double pos[3],
                            double quat[4]) const {
  for (int r = 0; r < 3; ++r) pos[r] = d->site_xpos[3 * eef_site_ + r];
  mju_mat2Quat(quat, d->site_xmat + 9 * eef_site_);
}

void ArmController::FingerPositions(const mjData* d, double out[2]) const {
  out[0] = d->qpos[finger_qpos_[0]];
  out[1] = d->qpos[finger_qpos_[1]];
}

}  // namespace rlvla3
