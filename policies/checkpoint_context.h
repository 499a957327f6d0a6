// File: policies/checkpoint_context.h
// -----------------------------------------------------------------------------
// What a checkpoint's policy was trained for, written beside its weights
// (context.json) by every checkpoint writer (SFT, the learner's scheduled
// and final checkpoints), whatever the policy's format: the camera images'
// size and names, the action chunk, the chunk steps executed per decision,
// the tasks, the experts' median episode length of the demos, and the
// interface a declared policy declares (key "interface"). `eval` and a
// run starting from a checkpoint take these instead of their defaults and
// refuse a value given that contradicts one
// (services/options/checkpoint_fit.h). The tokenizer is the policy's own
// (model.json / policy.json). A checkpoint written before this file existed
// has none: ReadCheckpointContext says so with nullopt.
//
// Example:
//   CheckpointContext ctx{64, 64, {"agentview", "wrist"}, 4, 4, {"lift"}};
//   absl::Status s = WriteCheckpointContext("runs/x/ckpt", ctx);
//   absl::StatusOr<std::optional<CheckpointContext>> r =
//       ReadCheckpointContext("runs/x/ckpt");
// -----------------------------------------------------------------------------
#ifndef RLVLA3_POLICIES_CHECKPOINT_CONTEXT_H_
#define RLVLA3_POLICIES_CHECKPOINT_CONTEXT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "policies/policy_interface.h"

namespace rlvla3 {

struct CheckpointContext {
  int64_t image_width = 0, image_height = 0;  // env.image_width / _height
  std::vector<std::string> cameras;           // in the policy's input order
  int64_t chunk = 0;                          // policy.chunk
  int64_t execute_steps = 0;       // chunk steps executed per decision
  std::vector<std::string> tasks;  // the tasks' names (or task files)
  // The scripted experts' median episode length (control steps) of the
  // demos SFT cloned, the longest task's (0: not recorded); a horizon rule
  // (env.horizon_factor) scales it.
  int64_t expert_steps = 0;
  // The interface the policy declares (policies/policy_interface.h); none
  // for TinyVLA's fixed shape.
  std::optional<PolicyInterface> interface;
};

// The file's name inside a checkpoint folder.
inline constexpr char kCheckpointContextFile[] = "context.json";

// Writes DIR/context.json (DIR exists); a context without an image size
// (options built without a config, as in tests) records nothing.
absl::Status WriteCheckpointContext(const std::string& dir,
                                    const CheckpointContext& context);
// DIR/context.json, or nullopt when DIR has none; a malformed one is an
// error naming the file and the field.
absl::StatusOr<std::optional<CheckpointContext>> ReadCheckpointContext(
    const std::string& dir);

}  // namespace rlvla3

#endif  // RLVLA3_POLICIES_CHECKPOINT_CONTEXT_H_
