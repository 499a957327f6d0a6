// File: envs/python/vec_env_core.h
// -----------------------------------------------------------------------------
// VecEnvCore: the env pool as the Python module sees it, in plain C++ (no
// Python types), so it is testable and the binding (envs/python/module.cc)
// stays a thin layer. Recv gathers the ready envs' states into caller-owned
// batch buffers (numpy arrays the binding allocates) with one copy per frame,
// as EnvPool's own batch gather; Send queues actions; experts act for ready
// envs (one scripted expert per env, restarted with each episode).
//
// Example:
//   absl::StatusOr<std::unique_ptr<VecEnvCore>> core = VecEnvCore::Create(o);
//   std::vector<int> ids;
//   (*core)->Recv(o.num_envs, absl::Seconds(60), &ids);  // initial states
//   (*core)->Gather(ids, batch);                         // into the buffers
//   (*core)->Send(ids, actions);                         // 7 floats per id
// -----------------------------------------------------------------------------
#ifndef RLVLA3_ENVS_PYTHON_VEC_ENV_CORE_H_
#define RLVLA3_ENVS_PYTHON_VEC_ENV_CORE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "envs/env_pool.h"
#include "envs/scripted_expert.h"

namespace rlvla3 {

// Where Gather writes the states of `n` envs: each pointer holds n rows.
struct StateBatch {
  uint8_t* images = nullptr;   // [n, C, H, W, 3]
  float* proprio = nullptr;    // [n, 8]
  float* reward = nullptr;     // [n]
  bool* terminated = nullptr;  // the goal holds (success)
  bool* truncated = nullptr;   // the horizon, unstable physics or a fault
  int32_t* env_id = nullptr;
  int32_t* elapsed_step = nullptr;  // control steps in the episode so far
  int32_t* init_id = nullptr;       // the episode's initial state
  uint64_t* episode_id = nullptr;
  bool* fault = nullptr;           // crashed/hung env: images are zeros
  bool* invalid_action = nullptr;  // the last action was rejected
};

class VecEnvCore {
 public:
  static absl::StatusOr<std::unique_ptr<VecEnvCore>> Create(
      const EnvPoolOptions& options);
  ~VecEnvCore();

  // Envs ready since the last call (at least min_envs), appended to `ids`;
  // DeadlineExceeded if fewer were ready by `timeout`.
  absl::Status Recv(int min_envs, absl::Duration timeout,
                    std::vector<int>* ids);
  // The states of `ids` (each returned by Recv, not sent since) into `out`.
  void Gather(absl::Span<const int> ids, const StateBatch& out) const;
  // One 7-D action per id (in [-1, 1], finite: else InvalidArgument and
  // nothing queued), or a reset to `init_ids[i]` where init_ids is given
  // (then `actions` is unused for that env).
  absl::Status Send(absl::Span<const int> ids, absl::Span<const float> actions,
                    absl::Span<const int> init_ids = {});
  // The scripted expert's action for each ready env of `ids`; an env whose
  // episode started since its last call gets a fresh script.
  absl::Status ExpertActions(absl::Span<const int> ids,
                             absl::Span<float> actions);
  // The task's instruction for env `env_id` ("" for a toy env).
  std::string instruction(int env_id) const;

  int num_envs() const { return pool_->num_envs(); }
  int num_threads() const { return pool_->num_threads(); }
  int num_cameras() const { return cameras_; }
  size_t camera_bytes() const { return camera_bytes_; }
  const EnvPoolOptions& options() const { return pool_->options(); }
  EnvPoolStats stats() const { return pool_->stats(); }
  void Close() { pool_->Close(); }

 private:
  explicit VecEnvCore(std::unique_ptr<EnvPool> pool);
  // The env's expert, made on first use (a toy env has none).
  absl::StatusOr<ScriptedExpert*> ExpertOf(int env_id);
  // Each id in [0, num_envs) and listed once (seen_ as scratch: the caller
  // is one thread at a time, as every call here).
  absl::Status CheckIds(absl::Span<const int> ids);

  std::unique_ptr<EnvPool> pool_;
  int cameras_ = 0;
  size_t camera_bytes_ = 0;
  std::vector<std::optional<ScriptedExpert>> experts_;
  std::vector<uint64_t> expert_episode_;  // the episode each script runs
  std::vector<uint8_t> seen_;  // CheckIds' marks, all 0 between calls
};

}  // namespace rlvla3

#endif  // RLVLA3_ENVS_PYTHON_VEC_ENV_CORE_H_
