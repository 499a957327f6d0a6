// File: services/runs/sft.h
// -----------------------------------------------------------------------------
// The SFT warm start (`rl-vla3 sft`) and policy evaluation (`rl-vla3 eval`).
// CollectDemonstrations runs the scripted experts through the env pool and
// keeps successful episodes; TrainBehaviourCloning fits TinyVLA to the experts'
// action tokens (cross-entropy over 256 bins per dimension, K-step chunks);
// EvaluatePolicy runs a policy (greedy or sampled) from the seeded initial
// states and reports success per task.
//
// Example:
//   absl::StatusOr<SftOptions> o = SftOptionsFromConfig(config);
//   absl::StatusOr<DemoSet> demos = CollectDemonstrations(o->demos, o->tasks);
//   absl::StatusOr<SftResult> r = RunSft(*o, run_dir, progress_callback);
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_RUNS_SFT_H_
#define RLVLA3_SERVICES_RUNS_SFT_H_

#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "envs/demos/demo_recording.h"
#include "envs/manipulation_env.h"
#include "policies/text_tokenizer.h"
#include "policies/trainable_policy.h"
#include "services/options/sft_options.h"

namespace rlvla3 {

// Expert demonstrations, stored flat: sample i is one control step.
struct DemoSet {
  int width = 0, height = 0, chunk = 0;
  std::vector<std::string> task_names;    // task id -> name
  std::vector<std::string> instructions;  // task id -> instruction
  std::vector<std::string> cameras;       // the run's (env.cameras), in order
  std::vector<uint8_t> images;            // [N, C, H, W, 3]
  std::vector<float> proprio;             // [N, 8]
  std::vector<int32_t> task;              // [N]
  // [N]: 1 where the sample is held out (a file's mask/valid): its loss is
  // the validation loss, it is never trained on.
  std::vector<uint8_t> valid;
  int64_t valid_episodes = 0;
  std::vector<int64_t> action_tokens;  // [N, K, 7]: the next K expert actions
  std::vector<float> actions;  // [N, K, 7]: the same, as the controller's
  int64_t episodes = 0;
  int64_t attempts = 0;  // expert episodes run (successful or not)
  // Each kept episode's task and length (control steps).
  std::vector<int32_t> episode_task, episode_steps;
  size_t size() const { return task.size(); }
  // The median episode length of the task whose median is the longest (0:
  // no episode): what a horizon rule scales (env.horizon_factor).
  int64_t MedianExpertSteps() const;
};

struct TaskSuccess {
  std::string task;
  int episodes = 0;
  int successes = 0;
  // Episode e (from initial state first_init + e) succeeded: the outcomes
  // a paired comparison of two checkpoints on the same states needs.
  std::vector<bool> outcomes;
};

struct SftResult {
  int64_t demo_samples = 0;
  int64_t demo_episodes = 0;
  double collect_s = 0, train_s = 0, eval_s = 0;
  int64_t optimizer_steps = 0;
  double final_loss = 0;
  // The loss over the held-out episodes (a file's mask/valid) at the last
  // report; NaN when none is held out.
  double valid_loss = std::numeric_limits<double>::quiet_NaN();
  int64_t valid_episodes = 0;
  double samples_per_s = 0;
  int64_t parameters = 0;
  std::string policy_kind = "tiny_vla";  // TrainablePolicy::kind()
  std::vector<TaskSuccess> eval;
  double mean_success = 0;
  std::string checkpoint;
};

// Runs the experts until every task has demos_per_task successful episodes,
// and records them as the env saw them (the cameras of o.env.cameras, the
// wrist named eye_in_hand as LIBERO does; LIBERO's proprio entries; the
// experts' clean actions).
absl::StatusOr<DemoRecording> CollectDemoRecording(
    const DemoOptions& o, const std::vector<TaskSpec>& tasks);
// The samples SFT clones from a recording (the experts', or a LIBERO-format
// file's): each step's frames of the run's `cameras` (picked by name, the
// run's wrist also as eye_in_hand, in the run's order) and its next `chunk`
// actions as tokens. Those cameras must be height x width, its proprio 8
// values and its actions 7-D; each episode's task one of `tasks`: the one
// `task_named`, else its task attribute, else the task whose instruction
// its instruction is. Episodes outside the file's splits are left out.
// Errors name `origin` and both sides.
absl::StatusOr<DemoSet> DemoSetFromRecording(
    const DemoRecording& r, int chunk, const std::vector<TaskSpec>& tasks,
    int width, int height, const std::vector<std::string>& cameras,
    const std::string& origin, const std::string& task_named = "");
// CollectDemoRecording, then DemoSetFromRecording.
absl::StatusOr<DemoSet> CollectDemonstrations(
    const DemoOptions& o, const std::vector<TaskSpec>& tasks);
// The samples SFT clones from LIBERO/robomimic HDF5 files (sft.demos): their
// episodes together (every file of one layout: cameras, proprio entries,
// action size), then DemoSetFromRecording. Errors name the file.
absl::StatusOr<DemoSet> ReadDemonstrations(
    const std::vector<std::string>& files, int chunk,
    const std::vector<TaskSpec>& tasks, int width, int height,
    const std::vector<std::string>& cameras, const DemoReadOptions& read = {},
    const std::string& task_named = "");
// `rl-vla3 demos export`: the experts' recording, one LIBERO-format file per
// task, DIR/<task>_demo.hdf5; returns the files written.
absl::StatusOr<std::vector<std::string>> ExportDemonstrations(
    const DemoOptions& o, const std::vector<TaskSpec>& tasks,
    const std::string& dir);
// The files of a recording, one per task: each holds its task's episodes
// and its task's attempts (not the recording's total).
absl::StatusOr<std::vector<std::string>> WriteRecordingPerTask(
    DemoRecording all, const std::vector<TaskSpec>& tasks,
    const std::string& dir);

// Rollouts of `policy` from initial states first_init .. first_init +
// episodes - 1 of each task: greedy (most likely token per dimension) or
// sampled, as RL rollouts act (torch's generator seeded with o.seed, so a
// sampled evaluation repeats). Training draws its episodes from states
// rl.init_state* (by default 0..49); eval holds out the states after. Each
// decision executes `execute_steps` of its chunk (0: o.execute_steps). The
// instructions are read by the tokenizer the policy declares, else by
// `tokenizer`.
absl::StatusOr<std::vector<TaskSuccess>> EvaluatePolicy(
    TrainablePolicy& policy, const TextTokenizer& tokenizer,
    const EvalOptions& o, const std::vector<TaskSpec>& tasks, int episodes,
    bool sampled, int first_init = 0, int execute_steps = 0);

// Collect, train, evaluate, checkpoint. `progress` gets a one-line status.
absl::StatusOr<SftResult> RunSft(
    const SftOptions& o, const std::string& run_dir,
    const std::function<void(const std::string&)>& progress);

std::string FormatSftResult(const SftResult& r);
std::string FormatTaskSuccess(const std::vector<TaskSuccess>& s);

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_RUNS_SFT_H_
