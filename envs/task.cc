#include "envs/task.h"

#include <cmath>
#include <cstdint>
#include <random>

#include "absl/strings/str_cat.h"

namespace rlvla3 {
namespace {

using G = SceneGeometry;

constexpr int kSpatialSteps = 220;  // LIBERO's canonical limits per suite
constexpr int kObjectSteps = 280;
constexpr int kGoalSteps = 300;
constexpr int kMaxPlacementTries = 10000;
constexpr double kRestingSpeed = 0.05;  // m/s: an object "rests" below this
constexpr double kOnTolerance = 0.015;  // m between a's bottom and b's top

// Work area reachable from the home pose, left/right halves of it (x, m).
constexpr double kWorkXMin = -0.24, kWorkXMax = 0.06;

Placement Region(const std::string& o, double x0, double x1, double y0,
                 double y1) {
  return Placement{o, x0, x1, y0, y1};
}

// Shorthand: the task tables below name many cubes.
ObjectSpec Cube(const char* colour) { return ObjectSpec::Cube(colour); }

// Pick one cube and put it on the plate or on another cube.
void AddSpatialTasks(std::vector<TaskSpec>* s) {
  auto spatial = [&](std::string name, std::string instr,
                     std::vector<ObjectSpec> objs, Predicate goal) {
    TaskSpec t;
    t.name = std::move(name);
    t.family = TaskFamily::kSpatial;
    t.instruction = std::move(instr);
    t.objects = std::move(objs);
    for (const auto& o : t.objects) {
      t.placements.push_back(
          o.kind == ObjectKind::kPlate
              ? Region(o.name, kWorkXMin, kWorkXMax, 0.05, 0.22)
              : Region(o.name, kWorkXMin, kWorkXMax, -0.22, 0.02));
    }
    t.goal = {std::move(goal)};
    t.max_steps = kSpatialSteps;
    s->push_back(std::move(t));
  };
  spatial("put_red_cube_on_plate", "put the red cube on the plate",
          {Cube("red"), Cube("green"), ObjectSpec::Plate()},
          {Predicate::Kind::kOn, "red_cube", "plate"});
  spatial("put_blue_cube_on_plate", "put the blue cube on the plate",
          {Cube("blue"), Cube("yellow"), ObjectSpec::Plate()},
          {Predicate::Kind::kOn, "blue_cube", "plate"});
  spatial("stack_green_cube_on_red_cube",
          "stack the green cube on the red cube",
          {Cube("red"), Cube("green"), Cube("blue")},
          {Predicate::Kind::kOn, "green_cube", "red_cube"});
  spatial("stack_yellow_cube_on_blue_cube",
          "stack the yellow cube on the blue cube",
          {Cube("blue"), Cube("yellow"), Cube("red")},
          {Predicate::Kind::kOn, "yellow_cube", "blue_cube"});
}

// Pick one cube and put it in a container (basket or bowl).
void AddObjectTasks(std::vector<TaskSpec>* s) {
  auto object = [&](std::string name, std::string instr,
                    std::vector<ObjectSpec> objs, Predicate goal) {
    TaskSpec t;
    t.name = std::move(name);
    t.family = TaskFamily::kObject;
    t.instruction = std::move(instr);
    t.objects = std::move(objs);
    for (const auto& o : t.objects) {
      const bool container =
          o.kind == ObjectKind::kBasket || o.kind == ObjectKind::kBowl;
      t.placements.push_back(
          container ? Region(o.name, -0.16, 0.0, 0.1, 0.2)
                    : Region(o.name, kWorkXMin, kWorkXMax, -0.22, -0.02));
    }
    t.goal = {std::move(goal)};
    t.max_steps = kObjectSteps;
    s->push_back(std::move(t));
  };
  object("put_red_cube_in_basket", "put the red cube in the basket",
         {Cube("red"), Cube("blue"), ObjectSpec::Basket()},
         {Predicate::Kind::kIn, "red_cube", "basket"});
  object("put_green_cube_in_basket", "put the green cube in the basket",
         {Cube("green"), Cube("yellow"), ObjectSpec::Basket()},
         {Predicate::Kind::kIn, "green_cube", "basket"});
  object("put_blue_cube_in_bowl", "put the blue cube in the bowl",
         {Cube("blue"), Cube("red"), ObjectSpec::Bowl()},
         {Predicate::Kind::kIn, "blue_cube", "bowl"});
  object("put_yellow_cube_in_bowl", "put the yellow cube in the bowl",
         {Cube("yellow"), Cube("green"), ObjectSpec::Bowl()},
         {Predicate::Kind::kIn, "yellow_cube", "bowl"});
}

// Goal family: one scene (cabinet with drawer, bowl, two cubes), four goals.
void AddGoalTasks(std::vector<TaskSpec>* s) {
  auto goal = [&](std::string name, std::string instr, Predicate p,
                  double drawer_open) {
    TaskSpec t;
    t.name = std::move(name);
    t.family = TaskFamily::kGoal;
    t.instruction = std::move(instr);
    t.objects = {ObjectSpec::Drawer(), ObjectSpec::Bowl(), Cube("red"),
                 Cube("green")};
    t.placements = {Region("bowl", -0.2, -0.05, -0.22, -0.12),
                    Region("red_cube", -0.26, 0.0, -0.05, 0.05),
                    Region("green_cube", -0.26, 0.0, -0.05, 0.05)};
    t.goal = {std::move(p)};
    t.drawer_open_init = drawer_open;
    t.max_steps = kGoalSteps;
    s->push_back(std::move(t));
  };
  goal("open_the_drawer", "open the drawer",
       {Predicate::Kind::kOpen, "drawer", "", 0.7}, 0.0);
  goal("close_the_drawer", "close the drawer",
       {Predicate::Kind::kClosed, "drawer", "", 0.15}, 0.9);
  goal("lift_the_red_cube", "lift the red cube",
       {Predicate::Kind::kLifted, "red_cube", "", 0.08}, 0.0);
  goal("put_the_green_cube_in_the_bowl", "put the green cube in the bowl",
       {Predicate::Kind::kIn, "green_cube", "bowl"}, 0.0);
}

std::vector<TaskSpec> MakeSuite() {
  std::vector<TaskSpec> s;
  AddSpatialTasks(&s);
  AddObjectTasks(&s);
  AddGoalTasks(&s);
  return s;
}

uint64_t Fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

// Uniform in [lo, hi), defined by our own arithmetic so it is the same
// everywhere.
double Uniform(std::mt19937_64& rng, double lo, double hi) {
  const double u =
      static_cast<double>(rng() >> 11) * (1.0 / 9007199254740992.0);
  return lo + (hi - lo) * u;
}

const ObjectSpec* FindObject(const TaskSpec& t, const std::string& name) {
  for (const auto& o : t.objects) {
    if (o.name == name) return &o;
  }
  return nullptr;
}

double LinearSpeed(const mjModel* m, const mjData* d, int body) {
  const int j = m->body_jntadr[body];
  if (j < 0 || m->jnt_type[j] != mjJNT_FREE) return 0.0;
  const mjtNum* v = d->qvel + m->jnt_dofadr[j];
  return std::sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
}

}  // namespace

const std::vector<TaskSpec>& BuiltinTaskSuite() {
  static const std::vector<TaskSpec>* suite =
      new std::vector<TaskSpec>(MakeSuite());
  return *suite;
}

const TaskSpec& ToyReachSpec() {
  static const TaskSpec* const spec = [] {
    auto* t = new TaskSpec();
    t->name = kToyReach;
    t->family = TaskFamily::kGoal;
    t->instruction = "reach the goal";
    t->max_steps = 4;
    t->toy = true;
    return t;
  }();
  return *spec;
}

const TaskSpec* FindTask(const std::string& name) {
  for (const auto& t : BuiltinTaskSuite()) {
    if (t.name == name) return &t;
  }
  if (name == kToyReach) return &ToyReachSpec();
  return nullptr;
}

const char* TaskFamilyName(TaskFamily f) {
  return kTaskFamilyNames.Name(f, "unknown");
}

InitialState SampleInitialState(const TaskSpec& task, int init_id) {
  std::mt19937_64 rng(Fnv1a(task.name) ^ (0x9E3779B97F4A7C15ull *
                                          static_cast<uint64_t>(init_id + 1)));
  InitialState s;
  s.drawer_open = task.drawer_open_init;
  for (const auto& p : task.placements) {
    InitialState::Pose pose{p.object, 0, 0, 0};
    for (int tries = 0; tries < kMaxPlacementTries; ++tries) {
      pose.x = Uniform(rng, p.x_min, p.x_max);
      pose.y = Uniform(rng, p.y_min, p.y_max);
      pose.yaw = Uniform(rng, -M_PI / 4, M_PI / 4);
      bool clear = true;
      for (const auto& other : s.poses) {
        if (std::hypot(other.x - pose.x, other.y - pose.y) <
            kMinObjectSeparation)
          clear = false;
      }
      if (clear) break;
    }
    s.poses.push_back(pose);
  }
  return s;
}

absl::StatusOr<GoalChecker> GoalChecker::Create(const mjModel* m,
                                                const TaskSpec& task) {
  GoalChecker g;
  for (const auto& p : task.goal) {
    Resolved r{p};
    r.body_a = mj_name2id(m, mjOBJ_BODY, p.a.c_str());
    if (r.body_a < 0)
      return absl::InvalidArgumentError(
          absl::StrCat("goal names unknown body ", p.a));
    if (!p.b.empty()) {
      r.body_b = mj_name2id(m, mjOBJ_BODY, p.b.c_str());
      if (r.body_b < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("goal names unknown body ", p.b));
      }
    }
    if (p.kind == Predicate::Kind::kOpen ||
        p.kind == Predicate::Kind::kClosed) {
      const int j = mj_name2id(m, mjOBJ_JOINT, (p.a + "_slide").c_str());
      if (j < 0)
        return absl::InvalidArgumentError(
            absl::StrCat(p.a, " has no slide joint"));
      r.slide_qpos = m->jnt_qposadr[j];
    }
    // Object kinds decide container footprints and heights.
    if ((p.kind == Predicate::Kind::kOn || p.kind == Predicate::Kind::kIn) &&
        FindObject(task, p.b) == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("goal names unknown object ", p.b));
    }
    g.preds_.push_back(r);
    g.preds_.back().p = p;
  }
  g.kinds_.clear();
  for (const auto& r : g.preds_) {
    const ObjectSpec* b = r.p.b.empty() ? nullptr : FindObject(task, r.p.b);
    g.kinds_.push_back(b ? b->kind : ObjectKind::kCube);
  }
  return g;
}

bool GoalChecker::Holds(const mjModel* m, const mjData* d, size_t i) const {
  const Resolved& r = preds_[i];
  const mjtNum* a = d->xpos + 3 * r.body_a;
  const mjtNum* b = r.body_b >= 0 ? d->xpos + 3 * r.body_b : nullptr;
  const double dxy = b ? std::hypot(a[0] - b[0], a[1] - b[1]) : 0.0;
  const bool resting = LinearSpeed(m, d, r.body_a) < kRestingSpeed;
  switch (r.p.kind) {
    case Predicate::Kind::kOn: {
      const bool on_cube = kinds_[i] == ObjectKind::kCube;
      const double top = on_cube ? b[2] + G::kCubeHalf : b[2] + G::kPlateHeight;
      const double radius = on_cube ? G::kCubeHalf : G::kPlateRadius;
      return resting && dxy < radius &&
             std::abs(a[2] - G::kCubeHalf - top) < kOnTolerance;
    }
    case Predicate::Kind::kIn: {
      const bool bowl = kinds_[i] == ObjectKind::kBowl;
      const double height = bowl ? G::kBowlHeight : G::kBasketHeight;
      bool inside;
      if (bowl) {
        inside = dxy < G::kBowlRadius;
      } else {
        // Basket: square footprint in the basket's own frame.
        const mjtNum* R = d->xmat + 9 * r.body_b;
        const double dx = a[0] - b[0], dy = a[1] - b[1];
        const double lx = R[0] * dx + R[3] * dy, ly = R[1] * dx + R[4] * dy;
        inside = std::abs(lx) < G::kBasketHalf && std::abs(ly) < G::kBasketHalf;
      }
      return resting && inside && a[2] > b[2] &&
             a[2] < b[2] + height + G::kCubeHalf;
    }
    case Predicate::Kind::kLifted:
      return a[2] > G::kCubeHalf + r.p.value;
    case Predicate::Kind::kOpen:
      return d->qpos[r.slide_qpos] >= r.p.value * G::kDrawerTravel;
    case Predicate::Kind::kClosed:
      return d->qpos[r.slide_qpos] <= r.p.value * G::kDrawerTravel;
    case Predicate::Kind::kNear:
      return dxy < r.p.value;
  }
  return false;
}

bool GoalChecker::Satisfied(const mjModel* m, const mjData* d) const {
  for (size_t i = 0; i < preds_.size(); ++i) {
    if (!Holds(m, d, i)) return false;
  }
  return true;
}

}  // namespace rlvla3
