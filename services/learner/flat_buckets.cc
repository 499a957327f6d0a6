#include "services/learner/flat_buckets.h"

#include <torch/torch.h>

#include <algorithm>

namespace rlvla3 {

BucketSet::BucketSet(absl::Span<const at::Tensor> tensors,
                     int64_t bucket_bytes) {
  const int64_t cap =
      std::max<int64_t>(1, bucket_bytes / int64_t{sizeof(float)});
  Bucket cur;
  int64_t size = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const int64_t n = tensors[i].numel();
    if (size > 0 && size + n > cap) {
      Close(&cur, size, tensors, i);
      size = 0;
    }
    cur.offsets.push_back(size);
    cur.numels.push_back(n);
    size += n;
  }
  if (size > 0) Close(&cur, size, tensors, tensors.size());
}

void BucketSet::Pack(Bucket& b, absl::Span<at::Tensor> tensors) {
  for (size_t k = 0; k < b.numels.size(); ++k) {
    b.flat.narrow(0, b.offsets[k], b.numels[k])
        .copy_(tensors[b.first + k].reshape(-1));
  }
}

void BucketSet::Unpack(Bucket& b, absl::Span<at::Tensor> tensors) {
  for (size_t k = 0; k < b.numels.size(); ++k) {
    at::Tensor& t = tensors[b.first + k];
    t.copy_(b.flat.narrow(0, b.offsets[k], b.numels[k]).view(t.sizes()));
  }
}

void BucketSet::Close(Bucket* cur, int64_t size,
                      absl::Span<const at::Tensor> tensors, size_t next) {
  cur->flat = torch::zeros({size}, tensors[cur->first].options());
  buckets_.push_back(std::move(*cur));
  *cur = Bucket();
  cur->first = next;
}

BucketSet& BucketCache::Get(int key, absl::Span<const at::Tensor> tensors) {
  std::vector<int64_t> numels;
  numels.reserve(tensors.size());
  for (const at::Tensor& t : tensors) numels.push_back(t.numel());
  auto k = std::make_pair(key, std::move(numels));
  auto it = sets_.find(k);
  if (it == sets_.end()) {
    it = sets_.emplace(std::move(k), BucketSet(tensors, bucket_bytes_)).first;
  }
  return it->second;
}

}  // namespace rlvla3
