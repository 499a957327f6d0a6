#include "services/net/weight_codec.h"

#include <torch/torch.h>

#include "absl/strings/str_cat.h"
#include "runtime/tensor_codec.h"

namespace rlvla3 {
namespace {

constexpr uint64_t kFnvOffset = 1469598103934665603ull;
constexpr uint64_t kFnvPrime = 1099511628211ull;

uint64_t Fnv(uint64_t h, const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= kFnvPrime;
  }
  return h;
}

}  // namespace

uint64_t WeightChecksum(const TrainablePolicy::NamedTensors& state) {
  uint64_t h = kFnvOffset;
  for (const auto& [name, t] : state) {
    h = Fnv(h, name.data(), name.size());
    for (int64_t d : t.sizes()) h = Fnv(h, &d, sizeof(d));
    const at::Tensor c = t.contiguous().cpu();
    h = Fnv(h, c.data_ptr(), c.numel() * c.element_size());
  }
  return h;
}

absl::StatusOr<std::vector<v1::WeightUpdate>> EncodeWeights(
    const TrainablePolicy::NamedTensors& state, const std::string& kind,
    uint64_t version, size_t chunk_bytes) {
  std::vector<v1::WeightUpdate> out;
  uint64_t total = 0;
  size_t in_chunk = 0;
  for (const auto& [name, t] : state) {
    const size_t bytes = static_cast<size_t>(t.numel() * t.element_size());
    if (out.empty() || (in_chunk > 0 && in_chunk + bytes > chunk_bytes)) {
      out.emplace_back();
      in_chunk = 0;
    }
    v1::NamedTensor* nt = out.back().add_tensors();
    nt->set_name(name);
    // Every dtype a policy holds (float, half, bfloat16, integer buffers)
    // has a wire code.
    const absl::Status s = EncodeTensor(t, nt->mutable_tensor());
    if (!s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("weights '", name, "': ", s.message()));
    }
    in_chunk += bytes;
    total += bytes;
  }
  if (out.empty()) out.emplace_back();
  const uint64_t checksum = WeightChecksum(state);
  for (size_t i = 0; i < out.size(); ++i) {
    out[i].set_version(version);
    out[i].set_chunk_index(static_cast<uint32_t>(i));
    out[i].set_num_chunks(static_cast<uint32_t>(out.size()));
    out[i].set_total_bytes(total);
    out[i].set_policy_kind(kind);
    out[i].set_checksum(checksum);
  }
  return out;
}

absl::Status WeightAssembler::Add(const v1::WeightUpdate& chunk) {
  if (chunk.policy_kind() != kind_) {
    return absl::FailedPreconditionError(absl::StrCat(
        "weights: version ", chunk.version(), " is for a '",
        chunk.policy_kind(), "' policy, this server runs '", kind_,
        "' (start every role from the same policy.kind / checkpoint)"));
  }
  if (chunk.num_chunks() == 0 || chunk.chunk_index() >= chunk.num_chunks()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "weights: chunk ", chunk.chunk_index(), " of ", chunk.num_chunks()));
  }
  if (chunk.chunk_index() == 0) {
    version_ = chunk.version();
    checksum_ = chunk.checksum();
    chunks_ = chunk.num_chunks();
    have_ = 0;
    state_.clear();
  } else if (chunk.version() != version_ || chunk.chunk_index() != have_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "weights: chunk ", chunk.chunk_index(), " of version ", chunk.version(),
        " out of order (have ", have_, " of ", version_, ")"));
  }
  for (const v1::NamedTensor& nt : chunk.tensors()) {
    absl::StatusOr<at::Tensor> t =
        DecodeTensor(nt.tensor(), absl::StrCat("weights.", nt.name()));
    if (!t.ok()) return t.status();
    state_.emplace_back(nt.name(), *std::move(t));
  }
  ++have_;
  return absl::OkStatus();
}

absl::StatusOr<AssembledWeights> WeightAssembler::Take() {
  if (!complete()) return absl::FailedPreconditionError("weights incomplete");
  const uint64_t sum = WeightChecksum(state_);
  if (sum != checksum_) {
    return absl::DataLossError(
        absl::StrCat("weights: version ", version_, " checksum ", sum,
                     " does not match the sender's ", checksum_));
  }
  AssembledWeights w{version_, std::move(state_)};
  state_.clear();
  have_ = chunks_ = 0;
  return w;
}

}  // namespace rlvla3
