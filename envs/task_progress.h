// File: envs/task_progress.h
// -----------------------------------------------------------------------------
// TaskProgress: a graded outcome for any task, derived from its first goal
// predicate, the one the scripted expert plans from. A potential in [0, 1]
// that counts the phases of that predicate, each in [0, 1] and measured
// against where the episode started (no per-task constants):
//   on / in / near a b: reach a, hold a (off the table, in the hand), lift a,
//                       carry a over b (counted while held);
//   lifted a:           reach a, hold a, lift a to the predicate's height;
//   open / closed a:    reach the drawer's handle, slide it to the target.
// The env adds w x (potential after the step - potential before it) to the
// sparse success reward (env.progress_reward): shaping by a potential, so an
// episode's return is success + w x (final - initial potential) and, with
// w < 1/2, every success outranks every failure, while among failures the
// ones that grasped and lifted outrank the ones that never reached.
//
// The immutable part (bodies, sites, targets) is built once per task model;
// the start (the distances progress is measured from) is per episode.
//
// Example:
//   absl::StatusOr<TaskProgress> p = TaskProgress::Create(m, task, eef_site);
//   TaskProgress::Start s = p->Begin(m, d);         // at reset
//   double phi = p->Potential(m, d, s);              // after each step
// -----------------------------------------------------------------------------
#ifndef RLVLA3_ENVS_TASK_PROGRESS_H_
#define RLVLA3_ENVS_TASK_PROGRESS_H_

#include <mujoco/mujoco.h>

#include "absl/status/statusor.h"
#include "envs/task.h"

namespace rlvla3 {

class TaskProgress {
 public:
  // Where an episode started: the distances its phases are measured from.
  struct Start {
    double reach = 1;  // end effector to the object (or handle), m
    double carry = 1;  // object to the target, horizontally, m
    double slide = 0;  // the drawer's opening, m
  };

  // Resolves the first goal predicate's bodies; `eef_site` is the arm's.
  static absl::StatusOr<TaskProgress> Create(const mjModel* m,
                                             const TaskSpec& task,
                                             int eef_site);
  Start Begin(const mjModel* m, const mjData* d) const;
  // The potential in [0, 1] of state `d` for an episode that began at `s`.
  double Potential(const mjModel* m, const mjData* d, const Start& s) const;

 private:
  enum class Plan { kCarry, kLift, kDrawer };
  TaskProgress() = default;
  // End effector to the object (or handle), m.
  double ReachDistance(const mjData* d) const;
  // 1 while the object is off the table within a hand's reach of the end
  // effector, else 0.
  double Held(const mjData* d) const;

  Plan plan_ = Plan::kLift;
  int eef_site_ = -1;
  int object_body_ = -1;     // a (pick plans)
  int target_body_ = -1;     // b (kCarry)
  int handle_site_ = -1;     // kDrawer
  int slide_qpos_ = -1;      // kDrawer
  double lift_ = 0.05;       // m above resting that counts as lifted
  double slide_target_ = 0;  // kDrawer: the opening the predicate asks, m
};

}  // namespace rlvla3

#endif  // RLVLA3_ENVS_TASK_PROGRESS_H_
