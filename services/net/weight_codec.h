// File: services/net/weight_codec.h
// -----------------------------------------------------------------------------
// A policy's weights <-> WeightUpdate messages (level 3 on the wire). A
// version is split into chunks of at most `chunk_bytes` tensor bytes (a
// tensor larger than that travels alone), so no message nears the gRPC size
// limit. Every update carries the policy kind and an FNV-1a 64 checksum over
// every tensor's name, shape and bytes; WeightAssembler refuses a version
// whose kind or checksum does not match, naming which.
//
// Example:
//   absl::StatusOr<std::vector<v1::WeightUpdate>> chunks =
//       EncodeWeights(policy.State(), policy.kind(), /*version=*/7, 4 << 20);
//   WeightAssembler a("tiny_vla");
//   for (const auto& c : *chunks) RETURN_IF_ERROR(a.Add(c));
//   if (a.complete()) absl::StatusOr<AssembledWeights> w = a.Take();
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_NET_WEIGHT_CODEC_H_
#define RLVLA3_SERVICES_NET_WEIGHT_CODEC_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "policies/trainable_policy.h"
#include "rlvla3/v1/rollout.pb.h"

namespace rlvla3 {

absl::StatusOr<std::vector<v1::WeightUpdate>> EncodeWeights(
    const TrainablePolicy::NamedTensors& state, const std::string& kind,
    uint64_t version, size_t chunk_bytes);

// FNV-1a 64 over every tensor's name, shape and contiguous bytes, in order.
uint64_t WeightChecksum(const TrainablePolicy::NamedTensors& state);

struct AssembledWeights {
  uint64_t version = 0;
  TrainablePolicy::NamedTensors state;
};

// Collects one version's chunks, in order. A chunk of a newer version drops
// an incomplete older one (latest wins).
class WeightAssembler {
 public:
  explicit WeightAssembler(std::string expected_kind)
      : kind_(std::move(expected_kind)) {}
  absl::Status Add(const v1::WeightUpdate& chunk);
  bool complete() const { return have_ > 0 && have_ == chunks_; }
  // The complete version, its checksum verified.
  absl::StatusOr<AssembledWeights> Take();

 private:
  std::string kind_;
  uint64_t version_ = 0, checksum_ = 0;
  uint32_t chunks_ = 0, have_ = 0;
  TrainablePolicy::NamedTensors state_;
};

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_NET_WEIGHT_CODEC_H_
