// File: envs/sim_env.h
// -----------------------------------------------------------------------------
// SimEnv: what the env pool steps. One episode after another: Reset starts
// one (from a given initial state, or one the env draws), Step advances it by
// one control step of a 7-D action in [-1, 1], and observation() is what the
// policy sees next (the run's uint8 HWC cameras, 8-D proprio, the
// instruction).
// ManipulationEnv (MuJoCo, envs/manipulation_env.h) is the product's env;
// ToyEnv (envs/toy_env.h) a few lines of state for RL sanity runs.
//
// Example:
//   std::unique_ptr<SimEnv> env = ...;
//   env->Reset(/*init_id=*/3);
//   absl::StatusOr<StepResult> r = env->Step(action);  // 7 floats
//   if (r.ok() && (r->done || r->truncated)) env->Reset();
// -----------------------------------------------------------------------------
#ifndef RLVLA3_ENVS_SIM_ENV_H_
#define RLVLA3_ENVS_SIM_ENV_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace rlvla3 {

inline constexpr int kActionDim = 7;
inline constexpr int kProprioDim = 8;

struct Observation {
  // [C, H, W, 3]: the cameras EnvOptions::cameras names, in that order.
  std::vector<uint8_t> images;
  // Camera c's image, of `bytes` = H x W x 3.
  const uint8_t* camera(int c, size_t bytes) const {
    return images.data() + static_cast<size_t>(c) * bytes;
  }
  float proprio[kProprioDim] = {};
  const std::string* instruction = nullptr;
};

struct StepResult {
  float reward = 0.0f;
  bool done = false;  // the goal holds: episode ends in success
  bool success = false;
  bool truncated = false;  // max_steps reached, or physics became unstable
  bool unstable = false;   // truncated because of NaN/Inf or MuJoCo warnings
};

// Where the last Step's (or Reset's) wall time went, in milliseconds:
// physics (control substeps, forward pass, goal check), then the two
// cameras' render and readback (envs/renderer.h RenderTimes).
struct StepPhases {
  double physics_ms = 0;
  double render_ms = 0;
  double readback_ms = 0;
};

class SimEnv {
 public:
  virtual ~SimEnv() = default;
  // Starts an episode from a state the env draws, or from `init_id`.
  virtual void Reset() = 0;
  virtual void Reset(int init_id) = 0;
  // One control step. A malformed action (size, NaN/Inf) is rejected with
  // InvalidArgument and nothing is stepped.
  virtual absl::StatusOr<StepResult> Step(absl::Span<const float> action) = 0;
  // The next Step need not draw the cameras: nothing reads its images (a
  // decision reads only the observation after its last executed step). The
  // images then keep the last drawn frame; the proprio is always current. A
  // step that ends the episode (done, truncated) is drawn all the same, as
  // its final observation may be read. Applies to the next Step only; an env
  // without cameras ignores it.
  virtual void SkipImagesOnNextStep() {}
  virtual const Observation& observation() const = 0;
  virtual const StepPhases& phases() const = 0;
  virtual int init_id() const = 0;
  virtual int step_count() const = 0;  // control steps in this episode
  virtual uint64_t episode_id() const = 0;
};

}  // namespace rlvla3

#endif  // RLVLA3_ENVS_SIM_ENV_H_
