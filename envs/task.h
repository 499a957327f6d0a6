// File: envs/task.h
// -----------------------------------------------------------------------------
// Tasks of the built-in suite: a scene (which objects), where they start
// (sampling regions, expanded into a fixed set of seeded initial states), a
// language instruction, a goal built from reusable predicates (on, in, lifted,
// open, closed, near) and a maximum episode length. Twelve tasks in three
// families mirror LIBERO's spatial / object / goal suites.
//
// Example:
//   const std::vector<TaskSpec>& suite = BuiltinTaskSuite();
//   const TaskSpec* t = FindTask("put_red_cube_in_bowl");
//   InitialState s = SampleInitialState(*t, /*init_id=*/3);
// -----------------------------------------------------------------------------
#ifndef RLVLA3_ENVS_TASK_H_
#define RLVLA3_ENVS_TASK_H_

#include <mujoco/mujoco.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "envs/scene.h"
#include "runtime/enum_names.h"

namespace rlvla3 {

// One goal condition on named scene bodies.
struct Predicate {
  enum class Kind {
    kOn,      // a rests on top of b (cube on cube, cube on plate)
    kIn,      // a is inside container b (bowl, basket)
    kLifted,  // a is at least `value` m above where it rests on the table
    kOpen,    // drawer a is open by at least `value` of its travel
    kClosed,  // drawer a is open by at most `value` of its travel
    kNear,    // a and b are within `value` m of each other (horizontally)
  };
  Kind kind;
  std::string a;
  std::string b;
  double value = 0.0;
};

// Where an object may start: uniform in a box on the table (m), random yaw.
struct Placement {
  std::string object;
  double x_min, x_max, y_min, y_max;
};

enum class TaskFamily { kSpatial, kObject, kGoal };
inline constexpr EnumNames<TaskFamily, 3> kTaskFamilyNames{
    {{{TaskFamily::kSpatial, "spatial"},
      {TaskFamily::kObject, "object"},
      {TaskFamily::kGoal, "goal"}}}};

struct TaskSpec {
  std::string name;  // identifier, e.g. "put_red_cube_in_bowl"
  TaskFamily family;
  std::string instruction;  // what the policy is told
  std::vector<ObjectSpec> objects;
  std::vector<Placement> placements;  // one per movable object
  std::vector<Predicate> goal;        // all must hold
  double drawer_open_init = 0.0;  // initial drawer opening (fraction of travel)
  std::string
      extra_worldbody;  // user MJCF bodies added to the scene (task files)
  int max_steps = 200;  // control steps (20 Hz)
  // Not a MuJoCo scene: the RL sanity env (envs/toy_env.h), which has no
  // objects, experts or renderer.
  bool toy = false;
};

// Pose of every free object at the start of an episode.
struct InitialState {
  struct Pose {
    std::string object;
    double x, y, yaw;
  };
  std::vector<Pose> poses;
  double drawer_open = 0.0;
};

inline constexpr int kInitStatesPerTask = 50;
inline constexpr double kMinObjectSeparation =
    0.11;  // m between object centres

// The built-in suite (12 tasks), in a fixed order: task ids are indexes.
const std::vector<TaskSpec>& BuiltinTaskSuite();
// The RL sanity env's task (envs/toy_env.h; TaskSpec::toy): not in the
// suite, found by name.
inline constexpr char kToyReach[] = "toy_reach";
const TaskSpec& ToyReachSpec();
// The task called `name` (a suite task or toy_reach), or nullptr.
const TaskSpec* FindTask(const std::string& name);
// Family name: "spatial" / "object" / "goal".
const char* TaskFamilyName(TaskFamily f);

// Initial state `init_id` of `task`: a pure function of (task name, init_id).
InitialState SampleInitialState(const TaskSpec& task, int init_id);

// Evaluates goal predicates against a simulation state. Body ids are resolved
// once at construction.
class GoalChecker {
 public:
  static absl::StatusOr<GoalChecker> Create(const mjModel* m,
                                            const TaskSpec& task);
  // True if every predicate holds in `d`.
  bool Satisfied(const mjModel* m, const mjData* d) const;
  // Evaluates one predicate (index into the task's goal).
  bool Holds(const mjModel* m, const mjData* d, size_t i) const;

 private:
  struct Resolved {
    Predicate p;
    int body_a = -1;
    int body_b = -1;
    int slide_qpos = -1;  // drawer predicates
  };
  std::vector<Resolved> preds_;
  std::vector<ObjectKind> kinds_;  // kind of each predicate's object b
};

}  // namespace rlvla3

#endif  // RLVLA3_ENVS_TASK_H_
