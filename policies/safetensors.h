// File: policies/safetensors.h
// -----------------------------------------------------------------------------
// Reads and writes the safetensors format (readable by Python's safetensors):
// an 8-byte little-endian header length N, N bytes of JSON mapping each tensor
// name to {"dtype", "shape", "data_offsets": [begin, end]} (plus an optional
// "__metadata__" map of strings), then the raw little-endian tensor bytes.
// Reading validates everything: header length, JSON, dtypes, shapes against
// byte ranges, ranges inside the file and not overlapping.
//
// Example:
//   WriteSafetensors("model.safetensors", {{"w", torch::ones({2, 3})}},
//   {{"version", "3"}}); absl::StatusOr<SafetensorsFile> f =
//   ReadSafetensors("model.safetensors");
// -----------------------------------------------------------------------------
#ifndef RLVLA3_POLICIES_SAFETENSORS_H_
#define RLVLA3_POLICIES_SAFETENSORS_H_

#include <ATen/core/Tensor.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace rlvla3 {

struct SafetensorsFile {
  std::vector<std::pair<std::string, at::Tensor>> tensors;  // sorted by name
  std::map<std::string, std::string> metadata;
};

// Writes `tensors` (any device; copied to CPU, contiguous) to `path`.
absl::Status WriteSafetensors(
    const std::string& path,
    const std::vector<std::pair<std::string, at::Tensor>>& tensors,
    const std::map<std::string, std::string>& metadata = {});

// Reads and validates `path`; errors name the file and what is wrong.
absl::StatusOr<SafetensorsFile> ReadSafetensors(const std::string& path);

}  // namespace rlvla3

#endif  // RLVLA3_POLICIES_SAFETENSORS_H_
