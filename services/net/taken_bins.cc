#include "services/net/taken_bins.h"

#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace rlvla3 {

v1::DType TakenDtype(int taken_bytes) {
  return taken_bytes == 1 ? v1::DTYPE_UINT8 : v1::DTYPE_FLOAT32;
}

absl::Status CheckTakenBins(const v1::Tensor& t, int taken_bytes,
                            const std::vector<int64_t>& bins,
                            const char* field) {
  if (bins.empty()) return absl::OkStatus();
  const std::string& data = t.data();
  const size_t A = bins.size();
  const size_t n = data.size() / static_cast<size_t>(taken_bytes);
  for (size_t i = 0; i < n; ++i) {
    double v = 0;
    if (taken_bytes == 1) {
      v = static_cast<uint8_t>(data[i]);
    } else {
      float f = 0;
      std::memcpy(&f, data.data() + 4 * i, sizeof(f));
      v = f;
    }
    const int64_t count = bins[i % A];
    if (!(v >= 0 && v < static_cast<double>(count) && std::floor(v) == v)) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, "[", i, "] = ", v, ": not a bin of dimension ",
                       i % A, " (whole numbers 0 to ", count - 1, ")"));
    }
  }
  return absl::OkStatus();
}

}  // namespace rlvla3
