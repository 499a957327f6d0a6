// File: services/net/wire_format.h
// -----------------------------------------------------------------------------
// The channels' in-process structs <-> their proto messages (rollout.proto).
// Encoding writes raw little-endian bytes straight from the worker's buffers
// into the message (a reused message keeps its string capacity: nothing is
// allocated per observation once warm). Decoding trusts nothing: every check
// failure is an InvalidArgument whose message names the field
// ("observation.images[1].rgb: shape [64, 32, 3], expected [64, 64, 3]").
//
// Example:
//   WireShape shape{.height = 64, .width = 64, .chunk = 4};
//   v1::Observation m;
//   EncodeObservation(request, /*global_env=*/12, shape, &m);
//   absl::Status s = CheckObservation(m, shape, /*num_envs=*/64, /*tasks=*/10);
//   ObservationRequest r = ObservationView(m);   // pointers into m
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_NET_WIRE_FORMAT_H_
#define RLVLA3_SERVICES_NET_WIRE_FORMAT_H_

#include <cstdint>
#include <limits>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "runtime/channels/observation_channel.h"
#include "runtime/channels/rollout_segment.h"

namespace rlvla3 {
namespace v1 {
class Observation;
class ActionReply;
class TrajectorySegment;
}  // namespace v1

// The shapes both ends agree on (from the same config).
struct WireShape {
  int height = 64, width = 64;
  // Camera names in message order (RunSettings.cameras), at most kMaxCameras.
  std::vector<std::string> cameras = {"agentview", "wrist"};
  int proprio_dim = 8;
  int chunk = 4, action_dim = 7;
  int taken_bytes = 1;  // action_tokens: 1 uint8 bins, 4 float32
};

// The wire's shapes of a run's segment shape (both ends build it so).
WireShape WireShapeOf(const SegmentShape& s);

// Level 1, the rollout side: `r`'s data under env id `global_env`.
void EncodeObservation(const ObservationRequest& r, int global_env,
                       const WireShape& shape, v1::Observation* out);
// Level 1, the inference side: shapes, dtypes, env id < num_envs, task id <
// num_tasks, finite proprio.
absl::Status CheckObservation(const v1::Observation& m, const WireShape& shape,
                              int num_envs, int num_tasks);
// A checked message's request; its pointers are into `m`.
ObservationRequest ObservationView(const v1::Observation& m);

// Sync mode: a stream's envs [first_env, first_env + parked.size()) and which
// of them are parked (parked[i] != 0: env first_env + i).
void EncodeEnvNotice(int first_env, absl::Span<const char> parked,
                     v1::Observation* out);
// The notice's envs are below num_envs, its parked envs among them.
absl::Status CheckEnvNotice(const v1::Observation& m, int num_envs);
// Sync mode: the server now serves `version` (no action).
void EncodeVersionNotice(uint64_t version, v1::ActionReply* out);

void EncodeReply(const ActionReply& r, const WireShape& shape,
                 v1::ActionReply* out);
// An error reply for env `env`: `status`'s code and message.
void EncodeErrorReply(int env, const absl::Status& status,
                      v1::ActionReply* out);
// A reply's error (its error_code/message), or shape checks on its tensors.
absl::Status CheckReply(const v1::ActionReply& m, const WireShape& shape);
// A checked reply; its pointers are into `m`.
ActionReply ReplyView(const v1::ActionReply& m);

// Level 2: what a segment is checked against besides its shapes (the run's
// ranges; services.proto's TrajectorySegment says what each field means).
struct SegmentLimits {
  int num_envs = 1 << 30;   // global env ids are [0, num_envs)
  int num_tasks = 1 << 30;  // rows of the instruction table
  int execute_steps = 0;    // executed per decision in [1, this]; 0: the chunk
  bool grpo = false;        // one whole episode per segment (ends_episode)
  // The newest behaviour version a segment may carry (the learner's own).
  uint64_t max_version = std::numeric_limits<uint64_t>::max();
  // Per action dimension, the policy's bin count: a taken bin must be a
  // whole number below it. Empty: no bins (a Gaussian's sample, any finite
  // float).
  std::vector<int64_t> bins;
};

// `global_env` is the env's id across workers (the Observation's env_id).
void EncodeSegment(const RolloutSegment& s, int global_env,
                   v1::TrajectorySegment* out);
// Checks every field (ids, counts, flags, versions, shapes, dtypes, finite
// values) against `into->shape` and `limits`, then copies into `into` (the
// learner's preallocated segment). Nothing is copied unless all is well.
absl::Status DecodeSegment(const v1::TrajectorySegment& m,
                           const SegmentLimits& limits, RolloutSegment* into);

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_NET_WIRE_FORMAT_H_
