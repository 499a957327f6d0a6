// File: services/learner/flat_buckets.h
// -----------------------------------------------------------------------------
// Flat communication buckets for the gradient reducers: a list of tensors is
// laid out in contiguous buffers of about `bucket_bytes` each (allocated once,
// on the tensors' device), packed before a collective and unpacked after it,
// so a step issues a few large collectives instead of one per parameter.
// BucketCache keeps one BucketSet per (collective, tensor shapes) so the
// buffers are reused from step to step.
//
// Example:
//   BucketCache cache(25 << 20);
//   BucketSet& set = cache.Get(/*key=*/-1, grads);
//   for (Bucket& b : set.buckets()) { BucketSet::Pack(b, grads); ... }
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_LEARNER_FLAT_BUCKETS_H_
#define RLVLA3_SERVICES_LEARNER_FLAT_BUCKETS_H_

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "absl/types/span.h"

namespace rlvla3 {

// The tensors of one flat bucket: where each sits in the buffer.
struct Bucket {
  at::Tensor flat;
  std::vector<int64_t> offsets, numels;
  size_t first = 0;  // index of the bucket's first tensor
};

// Flat buckets for one list of tensors, packed and unpacked in place.
class BucketSet {
 public:
  BucketSet(absl::Span<const at::Tensor> tensors, int64_t bucket_bytes);
  std::vector<Bucket>& buckets() { return buckets_; }
  static void Pack(Bucket& b, absl::Span<at::Tensor> tensors);
  static void Unpack(Bucket& b, absl::Span<at::Tensor> tensors);

 private:
  // Allocates `cur`'s buffer, stores it and starts the next at `next`.
  void Close(Bucket* cur, int64_t size, absl::Span<const at::Tensor> tensors,
             size_t next);
  std::vector<Bucket> buckets_;
};

class BucketCache {
 public:
  explicit BucketCache(int64_t bucket_bytes) : bucket_bytes_(bucket_bytes) {}
  // The buckets of this (collective `key`, tensor list), made on first use.
  BucketSet& Get(int key, absl::Span<const at::Tensor> tensors);

 private:
  int64_t bucket_bytes_;
  std::map<std::pair<int, std::vector<int64_t>>, BucketSet> sets_;
};

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_LEARNER_FLAT_BUCKETS_H_
