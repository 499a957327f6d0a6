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

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "runtime/observation_channel.h"
#include "runtime/rollout_segment.h"

namespace rlvla3 {
namespace v1 {
class Observation;
class ActionReply;
class TrajectorySegment;
}  // namespace v1

// The shapes both ends agree on (from the same config).
struct WireShape {
  int height = 64, width = 64;
  int proprio_dim = 8;
  int chunk = 4, action_dim = 7;
};

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

// Level 2. Decode checks every tensor against `into->shape` and copies into
// it (the learner's preallocated segment).
void EncodeSegment(const RolloutSegment& s, v1::TrajectorySegment* out);
absl::Status DecodeSegment(const v1::TrajectorySegment& m,
                           RolloutSegment* into);

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_NET_WIRE_FORMAT_H_
