// File: services/options/checkpoint_fit.h
// -----------------------------------------------------------------------------
// A run's config against what a checkpoint records it was trained for
// (policies/checkpoint_context.h). The checkpoint's values take the place of
// the config's defaults: a key the config file or --set did not give is set
// to the checkpoint's value. A key given that contradicts the policy's
// inputs or actions (image size, cameras, chunk, executed chunk steps) is a
// config error naming the key (the CLI exits 2): evaluating or training a
// 64x64 policy on 128x128 images would otherwise run and give wrong numbers
// without a word. The tasks: an evaluation measures what the checkpoint was
// trained on, so a tasks key given against them (sft.tasks or env.tasks)
// is a config error too; eval's --task names other tasks explicitly. A run
// starting from the checkpoint may train on other tasks (fine-tuning on a
// new one): a given env.tasks stands and is logged.
//
// Which keys it fills: env.image_width, env.image_height, policy.chunk,
// rl.execute_steps, and the tasks key of the use (eval: sft.tasks; a run
// starting from the checkpoint: env.tasks).
//
// And the other way, what a checkpoint writer records from its options.
//
// Example:
//   absl::Status s = FitConfigToCheckpoint(path, CheckpointUse::kEval, &c);
//   if (IsConfigError(s)) return 2;
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_OPTIONS_CHECKPOINT_FIT_H_
#define RLVLA3_SERVICES_OPTIONS_CHECKPOINT_FIT_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "policies/checkpoint_context.h"
#include "runtime/config.h"

namespace rlvla3 {

enum class CheckpointUse {
  kEval,  // `eval --checkpoint`: its tasks key is sft.tasks
  // `eval --checkpoint --task NAME...`: other tasks named on purpose, in
  // sft.tasks; the tasks keys are neither checked nor adopted
  kEvalOtherTasks,
  kInit,  // rl.init_checkpoint: its tasks key is env.tasks
};

// Fits `*c` to the checkpoint folder `dir`'s context.json (nothing to do
// for a checkpoint without one). A key counts as given when it is in
// c->given.
absl::Status FitConfigToCheckpoint(const std::string& dir, CheckpointUse use,
                                   Config* c);

// What a checkpoint written by SFT (sft.*) or by RL (env.*, rl.*) of
// config `c` records.
CheckpointContext SftCheckpointContext(const Config& c);
CheckpointContext RlCheckpointContext(const Config& c);

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_OPTIONS_CHECKPOINT_FIT_H_
