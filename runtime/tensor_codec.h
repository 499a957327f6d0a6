// File: runtime/tensor_codec.h
// -----------------------------------------------------------------------------
// Converts between torch::Tensor and the wire tensor (rlvla3.v1.Tensor).
// Decoding trusts nothing: the dtype must be known, every dimension >= 0, the
// element count must not overflow, and the byte length must equal
// numel * element size. Any mismatch is an InvalidArgument status whose message
// names the field (e.g. "observation.images[0].rgb"), never a crash.
//
// Example:
//   rlvla3::v1::Tensor wire;
//   EncodeTensor(torch::rand({2, 3}), &wire);
//   absl::StatusOr<at::Tensor> t = DecodeTensor(wire, "reply.actions");
//   absl::StatusOr<at::Tensor> img =
//       DecodeTensor(wire, "obs.rgb", {.dtype = v1::DTYPE_UINT8, .shape = {128,
//       128, 3}});
// -----------------------------------------------------------------------------
#ifndef RLVLA3_RUNTIME_TENSOR_CODEC_H_
#define RLVLA3_RUNTIME_TENSOR_CODEC_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace at {
class Tensor;
}  // namespace at

namespace rlvla3 {
namespace v1 {
class Tensor;
}  // namespace v1

// What the caller expects of a decoded tensor; unset parts are not checked.
// A shape entry of -1 matches any size in that dimension.
struct TensorExpectation {
  std::optional<int> dtype;  // an rlvla3::v1::DType value
  std::optional<std::vector<int64_t>> shape;
};

// Writes `t` (any device, any layout) as a contiguous little-endian CPU tensor.
// Fails only for dtypes the wire format has no code for (e.g. complex).
absl::Status EncodeTensor(const at::Tensor& t, v1::Tensor* out);

// Validates `in` and returns a CPU tensor that owns a copy of its bytes.
// `field` names the tensor in error messages.
absl::StatusOr<at::Tensor> DecodeTensor(const v1::Tensor& in,
                                        absl::string_view field,
                                        const TensorExpectation& expect = {});

// Bytes per element of a wire dtype, or 0 for DTYPE_UNSPECIFIED / unknown
// codes.
size_t WireDTypeSize(int dtype);

}  // namespace rlvla3

#endif  // RLVLA3_RUNTIME_TENSOR_CODEC_H_
