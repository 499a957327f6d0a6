// File: services/learner/nccl_reducer.h
// -----------------------------------------------------------------------------
// A GradientReducer over NCCL directly on the tensors' device pointers (built
// with RLVLA3_WITH_NCCL; it needs nccl.h and the CUDA runtime, not a CUDA
// libtorch, so CI compiles and links it on a machine without a GPU). The
// ranks meet through the c10d TCPStore (c10d_reducer.cc): rank 0 makes the
// NCCL unique id, the others read it. Collectives run on the reducer's own
// CUDA stream, a blocking one, so they are ordered after the gradients
// libtorch computed on the legacy default stream; each collective is polled
// until done or `timeout`, then the communicator is aborted and the call
// fails (a dead rank ends the group with an error, not a hang).
//
// Example (c10d_reducer.cc does this for backend "nccl"):
//   absl::StatusOr<std::string> id = NewNcclUniqueId();   // rank 0
//   ... store->set("nccl_id", *id) / store->get(...) on the others ...
//   auto r = MakeNcclReducer({rank, world, device, timeout, 25 << 20}, id);
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_LEARNER_NCCL_REDUCER_H_
#define RLVLA3_SERVICES_LEARNER_NCCL_REDUCER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "services/learner/gradient_reducer.h"

namespace rlvla3 {

struct NcclGroupOptions {
  int rank = 0;
  int world_size = 1;
  int device = 0;  // the CUDA device this rank's tensors live on
  absl::Duration timeout = absl::Seconds(60);
  int64_t bucket_bytes = int64_t{25} << 20;
};

// A fresh NCCL unique id (rank 0 makes it), as bytes.
absl::StatusOr<std::string> NewNcclUniqueId();

// Joins the NCCL communicator of `unique_id` (blocks until every rank has).
absl::StatusOr<std::unique_ptr<GradientReducer>> MakeNcclReducer(
    const NcclGroupOptions& options, const std::string& unique_id);

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_LEARNER_NCCL_REDUCER_H_
