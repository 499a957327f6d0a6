// Fuzzes DecodeTensor with arbitrary wire messages. Properties: never crashes;
// a tensor it accepts re-encodes to the same dtype, shape and bytes.
#include <torch/torch.h>

#include <cstdint>
#include <cstdlib>

#include "rlvla3/v1/tensor.pb.h"
#include "runtime/tensor_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool init = [] {
    at::set_num_threads(1);
    return true;
  }();
  (void)init;
  rlvla3::v1::Tensor wire;
  if (!wire.ParseFromArray(data, static_cast<int>(size))) return 0;
  absl::StatusOr<at::Tensor> t = rlvla3::DecodeTensor(wire, "fuzz");
  if (!t.ok()) {
    if (t.status().message().rfind("fuzz: ", 0) != 0)
      std::abort();  // must name the field
    return 0;
  }
  rlvla3::v1::Tensor again;
  if (!rlvla3::EncodeTensor(*t, &again).ok()) std::abort();
  if (again.dtype() != wire.dtype() || again.data() != wire.data() ||
      again.shape_size() != wire.shape_size()) {
    std::abort();
  }
  for (int i = 0; i < wire.shape_size(); ++i) {
    if (again.shape(i) != wire.shape(i)) std::abort();
  }
  return 0;
}
