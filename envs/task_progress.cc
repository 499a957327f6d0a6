#include "envs/task_progress.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "envs/scene.h"

namespace rlvla3 {
namespace {

using G = SceneGeometry;

// Above its resting height by this much, the object is off the table (m).
constexpr double kOffTable = 0.01;
// Within this of the end effector, an object off the table is in the hand.
constexpr double kInHand = 0.06;
// The height a carried object is lifted to before it travels (m).
constexpr double kCarryLift = 0.05;

double Distance3(const mjtNum* a, const mjtNum* b) {
  return std::hypot(a[0] - b[0], a[1] - b[1], a[2] - b[2]);
}

// 1 at `now` = 0, 0 at `now` >= `start` (a start of ~0 counts as done).
double Closer(double now, double start) {
  if (start <= 1e-6) return 1;
  return 1 - std::clamp(now / start, 0.0, 1.0);
}

}  // namespace

absl::StatusOr<TaskProgress> TaskProgress::Create(const mjModel* m,
                                                  const TaskSpec& task,
                                                  int eef_site) {
  if (task.goal.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(task.name, ": no goal to measure progress against"));
  }
  TaskProgress p;
  p.eef_site_ = eef_site;
  const Predicate& g = task.goal.front();
  switch (g.kind) {
    case Predicate::Kind::kOn:
    case Predicate::Kind::kIn:
    case Predicate::Kind::kNear:
      p.plan_ = Plan::kCarry;
      p.target_body_ = mj_name2id(m, mjOBJ_BODY, g.b.c_str());
      p.lift_ = kCarryLift;
      break;
    case Predicate::Kind::kLifted:
      p.plan_ = Plan::kLift;
      p.lift_ = std::max(g.value, kOffTable);
      break;
    case Predicate::Kind::kOpen:
    case Predicate::Kind::kClosed: {
      p.plan_ = Plan::kDrawer;
      p.handle_site_ =
          mj_name2id(m, mjOBJ_SITE, (g.a + "_handle_site").c_str());
      const int j = mj_name2id(m, mjOBJ_JOINT, (g.a + "_slide").c_str());
      if (p.handle_site_ < 0 || j < 0) {
        return absl::InvalidArgumentError(absl::StrCat(task.name, ": drawer ",
                                                       g.a,
                                                       " has no handle site or "
                                                       "slide joint"));
      }
      p.slide_qpos_ = m->jnt_qposadr[j];
      p.slide_target_ = g.value * G::kDrawerTravel;
      return p;
    }
  }
  p.object_body_ = mj_name2id(m, mjOBJ_BODY, g.a.c_str());
  if (p.object_body_ < 0 || (p.plan_ == Plan::kCarry && p.target_body_ < 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat(task.name, ": the goal's bodies ", g.a, " ", g.b,
                     " are not in the scene"));
  }
  return p;
}

double TaskProgress::ReachDistance(const mjData* d) const {
  const mjtNum* e = d->site_xpos + 3 * eef_site_;
  const mjtNum* o = plan_ == Plan::kDrawer ? d->site_xpos + 3 * handle_site_
                                           : d->xpos + 3 * object_body_;
  return Distance3(e, o);
}

double TaskProgress::Held(const mjData* d) const {
  const mjtNum* o = d->xpos + 3 * object_body_;
  return o[2] > G::kCubeHalf + kOffTable && ReachDistance(d) < kInHand ? 1 : 0;
}

TaskProgress::Start TaskProgress::Begin(const mjModel* m,
                                        const mjData* d) const {
  Start s;
  s.reach = ReachDistance(d);
  if (plan_ == Plan::kCarry) {
    const mjtNum* a = d->xpos + 3 * object_body_;
    const mjtNum* b = d->xpos + 3 * target_body_;
    s.carry = std::hypot(a[0] - b[0], a[1] - b[1]);
  }
  if (plan_ == Plan::kDrawer) s.slide = d->qpos[slide_qpos_];
  return s;
}

double TaskProgress::Potential(const mjModel* m, const mjData* d,
                               const Start& s) const {
  const double reach = Closer(ReachDistance(d), s.reach);
  if (plan_ == Plan::kDrawer) {
    // The share of the way from the start's opening to the target's.
    const double way = slide_target_ - s.slide;
    const double done =
        std::abs(way) < 1e-6
            ? 1
            : std::clamp((d->qpos[slide_qpos_] - s.slide) / way, 0.0, 1.0);
    return (reach + done) / 2;
  }
  const double held = Held(d);
  const mjtNum* a = d->xpos + 3 * object_body_;
  const double lift =
      held * std::clamp((a[2] - G::kCubeHalf) / lift_, 0.0, 1.0);
  if (plan_ == Plan::kLift) return (reach + held + lift) / 3;
  const mjtNum* b = d->xpos + 3 * target_body_;
  const double carry =
      held * Closer(std::hypot(a[0] - b[0], a[1] - b[1]), s.carry);
  return (reach + held + lift + carry) / 4;
}

}  // namespace rlvla3
