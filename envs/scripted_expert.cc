#include "envs/scripted_expert.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace rlvla3 {
namespace {

using G = SceneGeometry;

constexpr double kCarryHeight = 0.16;  // eef z while carrying (m)
constexpr double kHoverHeight = 0.10;  // above the object before descending
constexpr double kGraspDepth = 0.0;    // eef at the cube centre when grasping
constexpr int kGraspSteps = 6;         // steps with the gripper closing
constexpr int kReleaseSteps = 5;
// Gripper commands (action[6]).
constexpr float kGripOpen = -1.0f, kGripClosed = 1.0f;
constexpr int kPhaseTimeout = 45;  // steps before a phase gives up and moves on
constexpr double kTol = 0.012;
constexpr double kGain =
    0.6;  // fraction of the position error corrected per step

double WrapQuarter(double yaw) {
  // Cubes are symmetric under 90 degree turns: the closest equivalent yaw.
  while (yaw > M_PI / 4) yaw -= M_PI / 2;
  while (yaw < -M_PI / 4) yaw += M_PI / 2;
  return yaw;
}

double BodyYaw(const mjData* d, int body) {
  const mjtNum* R = d->xmat + 9 * body;
  return std::atan2(R[3], R[0]);
}

float Clip(double v) { return static_cast<float>(std::clamp(v, -1.0, 1.0)); }

}  // namespace

absl::StatusOr<ScriptedExpert> ScriptedExpert::Create(const TaskModel& task) {
  const TaskSpec& t = task.task();
  if (t.goal.empty())
    return absl::InvalidArgumentError(absl::StrCat(t.name, ": no goal"));
  const mjModel* m = task.model();
  const Predicate& p = t.goal.front();
  ScriptedExpert e;
  switch (p.kind) {
    case Predicate::Kind::kOn:
    case Predicate::Kind::kIn:
    case Predicate::Kind::kNear: {
      e.plan_ = Plan::kPickPlace;
      e.object_body_ = mj_name2id(m, mjOBJ_BODY, p.a.c_str());
      e.target_body_ = mj_name2id(m, mjOBJ_BODY, p.b.c_str());
      ObjectKind kind = ObjectKind::kCube;
      for (const auto& o : t.objects) {
        if (o.name == p.b) kind = o.kind;
      }
      // Release with the cube's bottom just above the target's support surface.
      switch (kind) {
        case ObjectKind::kCube:
          e.place_height_ = 2 * G::kCubeHalf + 0.008;
          break;
        case ObjectKind::kPlate:
          e.place_height_ = G::kPlateHeight + G::kCubeHalf + 0.015;
          break;
        default:
          e.place_height_ = G::kCubeHalf + 0.05;
          break;
      }
      break;
    }
    case Predicate::Kind::kLifted:
      e.plan_ = Plan::kLift;
      e.object_body_ = mj_name2id(m, mjOBJ_BODY, p.a.c_str());
      break;
    case Predicate::Kind::kOpen:
    case Predicate::Kind::kClosed:
      e.plan_ = p.kind == Predicate::Kind::kOpen ? Plan::kOpenDrawer
                                                 : Plan::kCloseDrawer;
      e.handle_site_ =
          mj_name2id(m, mjOBJ_SITE, (p.a + "_handle_site").c_str());
      if (e.handle_site_ < 0)
        return absl::InvalidArgumentError(absl::StrCat(t.name, ": no handle"));
      break;
  }
  if ((e.plan_ == Plan::kPickPlace || e.plan_ == Plan::kLift) &&
      e.object_body_ < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(t.name, ": expert cannot find ", p.a));
  }
  if (e.plan_ == Plan::kPickPlace && e.target_body_ < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(t.name, ": expert cannot find ", p.b));
  }
  return e;
}

void ScriptedExpert::Reset() {
  phase_ = 0;
  phase_steps_ = 0;
  grasp_yaw_ = 0.0;
}

void ScriptedExpert::Advance() {
  ++phase_;
  phase_steps_ = 0;
}

bool ScriptedExpert::MoveTo(const ManipulationEnv& env, const double target[3],
                            double yaw, float grip, double tol,
                            float* action) const {
  const mjData* d = env.data();
  const ArmControllerOptions& o = env.task().controller().options();
  double pos[3], quat[4];
  env.task().controller().EefPose(d, pos, quat);
  double err2 = 0;
  for (int i = 0; i < 3; ++i) {
    const double e = target[i] - pos[i];
    err2 += e * e;
    action[i] = Clip(kGain * e / o.max_delta_pos);
  }
  // Orientation: hand pointing down, turned by `yaw` about world z.
  const double down[4] = {0, 1, 0, 0};
  const double spin[4] = {std::cos(yaw / 2), 0, 0, std::sin(yaw / 2)};
  double want[4], inv[4], diff[4], rot[3];
  mju_mulQuat(want, spin, down);
  mju_negQuat(inv, quat);
  mju_mulQuat(diff, want, inv);
  if (diff[0] < 0) {
    for (double& v : diff) v = -v;
  }
  mju_quat2Vel(rot, diff, 1.0);
  for (int i = 0; i < 3; ++i) action[3 + i] = Clip(rot[i] / o.max_delta_rot);
  action[6] = grip;
  return std::sqrt(err2) < tol;
}

void ScriptedExpert::Act(const ManipulationEnv& env, float* action) {
  ++phase_steps_;
  const bool timeout = phase_steps_ > kPhaseTimeout;
  if (plan_ == Plan::kPickPlace || plan_ == Plan::kLift) {
    if (!GraspAndLift(env, timeout, action)) Place(env, timeout, action);
  } else if (plan_ == Plan::kOpenDrawer) {
    OpenDrawer(env, timeout, action);
  } else {
    CloseDrawer(env, timeout, action);
  }
}

bool ScriptedExpert::GraspAndLift(const ManipulationEnv& env, bool timeout,
                                  float* action) {
  const mjData* d = env.data();
  const mjtNum* obj = d->xpos + 3 * object_body_;
  if (phase_ == 0) grasp_yaw_ = WrapQuarter(BodyYaw(d, object_body_));
  double t[3];
  switch (phase_) {
    case 0:  // hover above the object, aligned with its faces
      t[0] = obj[0], t[1] = obj[1], t[2] = obj[2] + kHoverHeight;
      if (MoveTo(env, t, grasp_yaw_, kGripOpen, kTol, action) || timeout)
        Advance();
      return true;
    case 1:  // descend around it
      t[0] = obj[0], t[1] = obj[1], t[2] = obj[2] + kGraspDepth;
      if (MoveTo(env, t, grasp_yaw_, kGripOpen, 0.008, action) || timeout)
        Advance();
      return true;
    case 2:  // close the gripper
      t[0] = obj[0], t[1] = obj[1], t[2] = obj[2] + kGraspDepth;
      MoveTo(env, t, grasp_yaw_, kGripClosed, kTol, action);
      if (phase_steps_ >= kGraspSteps) Advance();
      return true;
    case 3: {  // lift
      double pos[3], quat[4];
      env.task().controller().EefPose(d, pos, quat);
      t[0] = pos[0], t[1] = pos[1], t[2] = kCarryHeight;
      if ((MoveTo(env, t, grasp_yaw_, kGripClosed, kTol, action) || timeout) &&
          plan_ == Plan::kPickPlace) {
        Advance();
      }
      return true;
    }
    default:
      return false;
  }
}

void ScriptedExpert::Place(const ManipulationEnv& env, bool timeout,
                           float* action) {
  const mjData* d = env.data();
  const mjtNum* obj = d->xpos + 3 * object_body_;
  const mjtNum* tgt = d->xpos + 3 * target_body_;
  const double place_yaw =
      target_body_ >= 0 ? WrapQuarter(BodyYaw(d, target_body_)) : 0.0;
  // Aim the carried object, not the hand, at the target: the grasp is never
  // perfectly centred.
  double eef[3], quat[4];
  env.task().controller().EefPose(d, eef, quat);
  const double off_x = eef[0] - obj[0], off_y = eef[1] - obj[1];
  double t[3];
  switch (phase_) {
    case 4:  // carry above the target
      t[0] = tgt[0] + off_x, t[1] = tgt[1] + off_y, t[2] = kCarryHeight;
      if (MoveTo(env, t, place_yaw, kGripClosed, kTol, action) || timeout)
        Advance();
      return;
    case 5:  // lower
      t[0] = tgt[0] + off_x, t[1] = tgt[1] + off_y,
      t[2] = tgt[2] + place_height_;
      if (MoveTo(env, t, place_yaw, kGripClosed, 0.008, action) || timeout)
        Advance();
      return;
    case 6:  // release
      t[0] = tgt[0] + off_x, t[1] = tgt[1] + off_y,
      t[2] = tgt[2] + place_height_;
      MoveTo(env, t, place_yaw, kGripOpen, kTol, action);
      if (phase_steps_ >= kReleaseSteps) Advance();
      return;
    default: {  // retreat upwards and wait
      double pos[3], quat[4];
      env.task().controller().EefPose(d, pos, quat);
      t[0] = pos[0], t[1] = pos[1], t[2] = kCarryHeight;
      MoveTo(env, t, place_yaw, kGripOpen, kTol, action);
      return;
    }
  }
}

void ScriptedExpert::OpenDrawer(const ManipulationEnv& env, bool timeout,
                                float* action) {
  const mjtNum* h = env.data()->site_xpos + 3 * handle_site_;
  double t[3];
  switch (phase_) {
    case 0:
      t[0] = h[0], t[1] = h[1], t[2] = h[2] + kHoverHeight;
      if (MoveTo(env, t, 0.0, kGripOpen, kTol, action) || timeout) Advance();
      return;
    case 1:
      t[0] = h[0], t[1] = h[1], t[2] = h[2] - 0.005;
      if (MoveTo(env, t, 0.0, kGripOpen, 0.008, action) || timeout) Advance();
      return;
    case 2:
      t[0] = h[0], t[1] = h[1], t[2] = h[2] - 0.005;
      MoveTo(env, t, 0.0, kGripClosed, kTol, action);
      if (phase_steps_ >= kGraspSteps) Advance();
      return;
    case 3:  // pull along -x
      t[0] = h[0] - 0.06, t[1] = h[1], t[2] = h[2] - 0.005;
      MoveTo(env, t, 0.0, kGripClosed, kTol, action);
      if (phase_steps_ > 2 * kPhaseTimeout) Advance();
      return;
    default:
      t[0] = h[0], t[1] = h[1], t[2] = h[2] + kHoverHeight;
      MoveTo(env, t, 0.0, kGripOpen, kTol, action);
      return;
  }
}

// Come down in front of the handle (robot side), then push along +x.
void ScriptedExpert::CloseDrawer(const ManipulationEnv& env, bool timeout,
                                 float* action) {
  const mjtNum* h = env.data()->site_xpos + 3 * handle_site_;
  double t[3];
  switch (phase_) {
    case 0:
      t[0] = h[0] - 0.06, t[1] = h[1], t[2] = h[2] + kHoverHeight;
      if (MoveTo(env, t, 0.0, kGripClosed, kTol, action) || timeout) Advance();
      return;
    case 1:
      t[0] = h[0] - 0.06, t[1] = h[1], t[2] = h[2] - 0.01;
      if (MoveTo(env, t, 0.0, kGripClosed, kTol, action) || timeout) Advance();
      return;
    default:
      t[0] = h[0] + 0.06, t[1] = h[1], t[2] = h[2] - 0.01;
      MoveTo(env, t, 0.0, kGripClosed, kTol, action);
      return;
  }
}

}  // namespace rlvla3
