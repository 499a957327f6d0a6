// File: envs/task_file.h
// -----------------------------------------------------------------------------
// Loads a user's task from a YAML task description, without recompiling: which
// built-in objects the scene has, optional extra MJCF bodies (a user's own
// scene elements, merged into the generated table + arm scene), where objects
// start, the instruction, the goal predicates and the episode length. See the
// docs/tasks.md for the format. Errors name the file and the key;
// an invalid MJCF file gives MuJoCo's own message and the MJCF file's name.
//
// Example:
//   absl::StatusOr<TaskSpec> t =
//   LoadTaskFile("configs/tasks/lift_purple_block.yaml"); auto model =
//   TaskModel::Create(*t, options);
//   // Anywhere a task name is accepted, a path ending in .yaml works too:
//   absl::StatusOr<TaskSpec> u = ResolveTask("open_the_drawer");
// -----------------------------------------------------------------------------
#ifndef RLVLA3_ENVS_TASK_FILE_H_
#define RLVLA3_ENVS_TASK_FILE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "envs/task.h"

namespace rlvla3 {

// Parses and validates a task description file.
absl::StatusOr<TaskSpec> LoadTaskFile(const std::string& path);

// A built-in task by name, or a task file if `name_or_path` ends in .yaml/.yml.
absl::StatusOr<TaskSpec> ResolveTask(const std::string& name_or_path);

// "all" (the built-in suite) or a comma-separated list of names / task files.
// `key` names the config key in the error for an empty list.
absl::StatusOr<std::vector<TaskSpec>> ResolveTaskList(const std::string& list,
                                                      const std::string& key);

}  // namespace rlvla3

#endif  // RLVLA3_ENVS_TASK_FILE_H_
