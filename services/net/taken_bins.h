// File: services/net/taken_bins.h
// -----------------------------------------------------------------------------
// How a chunk step's taken action travels (RunSettings.action_tokens_dtype)
// and the check a learner makes on what a peer says a policy took: a bin
// index must be a whole number below its dimension's bin count, or the
// learner would index past the policy's logits.
//
// Example:
//   v1::DType dtype = TakenDtype(/*taken_bytes=*/1);   // DTYPE_UINT8
//   absl::Status s = CheckTakenBins(m.action_tokens(), 1, {64, 64, 2},
//                                   "segment.action_tokens");
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_NET_TAKEN_BINS_H_
#define RLVLA3_SERVICES_NET_TAKEN_BINS_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "rlvla3/v1/tensor.pb.h"

namespace rlvla3 {

// DTYPE_UINT8 for 1 byte per dimension, DTYPE_FLOAT32 for 4.
v1::DType TakenDtype(int taken_bytes);

// `t` (checked already for dtype and shape [..., A], A = bins.size()):
// every value a whole number in [0, bins[d]) for its dimension d. Empty
// `bins`: nothing to check (a Gaussian's samples, checked finite).
absl::Status CheckTakenBins(const v1::Tensor& t, int taken_bytes,
                            const std::vector<int64_t>& bins,
                            const char* field);

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_NET_TAKEN_BINS_H_
