// File: services/learner/c10d_reducer.h
// -----------------------------------------------------------------------------
// A GradientReducer over a torch c10d process group: Gloo on CPU, or NCCL on
// the tensors' device pointers in builds with RLVLA3_WITH_NCCL
// (nccl_reducer.h); rendezvous through a TCPStore that rank 0 hosts, as
// torchrun's MASTER_ADDR / MASTER_PORT / RANK / WORLD_SIZE (and LOCAL_RANK,
// the device) describe. Gradients are
// averaged in flat buckets of about `bucket_bytes` (buffers allocated once,
// every bucket's all-reduce in flight at once). Every collective waits at
// most `timeout`: a rank that dies or hangs ends the others' next collective
// with an error instead of a hang. This file and its .cc are the only ones
// that include c10d (its API differs between libtorch 1.13 and 2.x).
//
// Example:
//   absl::StatusOr<ProcessGroupOptions> o =
//       ProcessGroupOptionsFromEnvironment("gloo", absl::Seconds(60));
//   absl::StatusOr<std::unique_ptr<GradientReducer>> r =
//       ConnectProcessGroup(*o);   // blocks until every rank has joined
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_LEARNER_C10D_REDUCER_H_
#define RLVLA3_SERVICES_LEARNER_C10D_REDUCER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "services/learner/gradient_reducer.h"

namespace rlvla3 {

struct ProcessGroupOptions {
  std::string backend = "gloo";  // gloo | nccl
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;  // nccl: the CUDA device
  // Rendezvous and every collective.
  absl::Duration timeout = absl::Seconds(60);
  int64_t bucket_bytes = int64_t{25} << 20;
};

// MASTER_ADDR (default 127.0.0.1), MASTER_PORT (default 29500), RANK and
// WORLD_SIZE (default 0 and 1), LOCAL_RANK (default RANK) from the
// environment, checked. Read once, by
// the verb that starts the learner.
absl::StatusOr<ProcessGroupOptions> ProcessGroupOptionsFromEnvironment(
    const std::string& backend, absl::Duration timeout);

// Joins the group (blocks until all world_size ranks have, or timeout).
absl::StatusOr<std::unique_ptr<GradientReducer>> ConnectProcessGroup(
    const ProcessGroupOptions& options);

// The start-up every rank process shares: the options from torchrun's
// variables, then the group joined. `alone_is_local`: a world of one gets the
// local reducer (no store, no collectives). `before_join` sees the options
// before the (blocking) join, e.g. to log where the rank rendezvouses.
absl::StatusOr<std::unique_ptr<GradientReducer>>
JoinProcessGroupFromEnvironment(
    const std::string& backend, absl::Duration timeout, bool alone_is_local,
    const std::function<void(const ProcessGroupOptions&)>& before_join = {});

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_LEARNER_C10D_REDUCER_H_
