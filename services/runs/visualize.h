// File: services/runs/visualize.h
// -----------------------------------------------------------------------------
// Lets a person see what the envs do: `rl-vla3 render` writes one initial
// state's two camera views side by side to a PNG, `rl-vla3 rollout-video`
// runs an episode (scripted expert or a uniformly random policy) and writes a
// GIF (or an MP4 through ffmpeg when the name ends in .mp4 and ffmpeg exists).
//
// Example:
//   RenderInitialState("open_the_drawer", 0, options, "frame.png");
//   absl::StatusOr<RolloutSummary> s =
//       RecordRollout("lift_the_red_cube", "expert", 3, options, "run.gif");
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_RUNS_VISUALIZE_H_
#define RLVLA3_SERVICES_RUNS_VISUALIZE_H_

#include <string>

#include "absl/status/statusor.h"
#include "envs/manipulation_env.h"

namespace rlvla3 {

// Renders init state `init_id` of `task`; writes its cameras (options.cameras)
// side by side to `out_png` and each alone to <stem>_<camera>.png.
absl::Status RenderInitialState(const std::string& task, int init_id,
                                EnvOptions options, const std::string& out_png);

struct RolloutSummary {
  int steps = 0;
  bool success = false;
  int frames = 0;
};

// Runs one episode with `policy` ("expert" or "random") and records it.
absl::StatusOr<RolloutSummary> RecordRollout(const std::string& task,
                                             const std::string& policy,
                                             int init_id, EnvOptions options,
                                             const std::string& out_path);

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_RUNS_VISUALIZE_H_
