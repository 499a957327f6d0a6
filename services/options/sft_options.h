// File: services/options/sft_options.h
// -----------------------------------------------------------------------------
// The SFT warm start's and policy evaluation's options (`rl-vla3 sft`,
// `rl-vla3 eval`), made from the sft.*, env.*, policy.*, threads.* and run.*
// keys once: the experts' demonstrations, behaviour cloning, the evaluation
// rollouts. The config holds every default; these structs are filled from it.
//
// Example:
//   absl::StatusOr<SftOptions> o = SftOptionsFromConfig(config);
//   absl::StatusOr<SftResult> r = RunSft(*o, run_dir, progress);
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_OPTIONS_SFT_OPTIONS_H_
#define RLVLA3_SERVICES_OPTIONS_SFT_OPTIONS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "envs/demos/libero_file.h"
#include "envs/manipulation_env.h"
#include "envs/task.h"
#include "policies/checkpoint_context.h"
#include "policies/tiny_vla.h"
#include "runtime/config.h"

namespace rlvla3 {

// A policy's evaluation rollouts: one env per episode, seeded like RL's.
struct EvalOptions {
  EnvOptions env;
  uint64_t seed = 0;          // run.seed: envs and the sampled actions
  int64_t max_text_len = 0;   // policy.max_text_len
  int64_t execute_steps = 0;  // sft.execute_steps: chunk steps per decision
};

// The scripted experts' demonstrations through an env pool.
struct DemoOptions {
  EnvOptions env;
  int64_t num_envs = 0;  // env.num_envs, split evenly across the tasks
  int num_threads = 0;   // threads.env_workers
  int lp_num_threads = 0;
  uint64_t seed = 0;
  double noise = 0;  // sft.demo_noise (DART)
  int64_t demos_per_task = 0;
  int chunk = 0;  // policy.chunk: action tokens per sample
};

// Behaviour cloning of TinyVLA on the demonstrations.
struct CloningOptions {
  double lr = 0, weight_decay = 0, label_sigma_bins = 0;
  int64_t batch_size = 0, epochs = 0, augment_shift_px = 0;
  double time_budget_s = 0;
  double report_every_s = 0;  // metrics.interval_s
  uint64_t seed = 0;
};

struct SftOptions {
  std::vector<TaskSpec> tasks;  // sft.tasks, resolved
  DemoOptions demos;
  // sft.demos resolved: the HDF5 files to train from (empty: the experts).
  std::vector<std::string> demo_files;
  // How those files' fields map to the run's (sft.demo_*).
  DemoReadOptions demo_read;
  std::string demo_task;  // every episode's task ("": the file's)
  CloningOptions cloning;
  EvalOptions eval;
  TinyVLAOptions policy;  // vocab_size: the demos' tokenizer's, set by RunSft
  // policy.kind=torchscript: the module SFT trains (policy.path), else
  // TinyVLA of `policy`.
  std::string torchscript_path;
  int64_t eval_episodes = 0;
  std::string checkpoint;  // "" : <run folder>/checkpoint
  uint64_t seed = 0;
  CheckpointContext context;  // written beside the checkpoint's weights
};

// Task specs named by `sft.tasks` ("all", or comma-separated names / task
// files).
absl::StatusOr<std::vector<TaskSpec>> SftTasks(const Config& c);

EvalOptions EvalOptionsFromConfig(const Config& c);
DemoOptions DemoOptionsFromConfig(const Config& c);
absl::StatusOr<SftOptions> SftOptionsFromConfig(const Config& c);

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_OPTIONS_SFT_OPTIONS_H_
