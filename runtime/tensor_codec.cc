#include "runtime/tensor_codec.h"

#include <torch/torch.h>

#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "rlvla3/v1/tensor.pb.h"

namespace rlvla3 {
namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the wire format is little-endian");

// More dimensions than any rl-vla3 tensor has; bounds the work a hostile
// message causes.
constexpr int kMaxDims = 16;

std::optional<at::ScalarType> ToScalarType(int dtype) {
  switch (dtype) {
    case v1::DTYPE_UINT8:
      return at::kByte;
    case v1::DTYPE_INT8:
      return at::kChar;
    case v1::DTYPE_INT16:
      return at::kShort;
    case v1::DTYPE_INT32:
      return at::kInt;
    case v1::DTYPE_INT64:
      return at::kLong;
    case v1::DTYPE_FLOAT16:
      return at::kHalf;
    case v1::DTYPE_BFLOAT16:
      return at::kBFloat16;
    case v1::DTYPE_FLOAT32:
      return at::kFloat;
    case v1::DTYPE_FLOAT64:
      return at::kDouble;
    case v1::DTYPE_BOOL:
      return at::kBool;
    default:
      return std::nullopt;
  }
}

std::optional<v1::DType> ToWire(at::ScalarType t) {
  switch (t) {
    case at::kByte:
      return v1::DTYPE_UINT8;
    case at::kChar:
      return v1::DTYPE_INT8;
    case at::kShort:
      return v1::DTYPE_INT16;
    case at::kInt:
      return v1::DTYPE_INT32;
    case at::kLong:
      return v1::DTYPE_INT64;
    case at::kHalf:
      return v1::DTYPE_FLOAT16;
    case at::kBFloat16:
      return v1::DTYPE_BFLOAT16;
    case at::kFloat:
      return v1::DTYPE_FLOAT32;
    case at::kDouble:
      return v1::DTYPE_FLOAT64;
    case at::kBool:
      return v1::DTYPE_BOOL;
    default:
      return std::nullopt;
  }
}

std::string DTypeName(int dtype) {
  if (v1::DType_IsValid(dtype))
    return v1::DType_Name(static_cast<v1::DType>(dtype));
  return absl::StrCat("dtype code ", dtype);
}

std::string ShapeString(const google::protobuf::RepeatedField<int64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

}  // namespace

size_t WireDTypeSize(int dtype) {
  const auto st = ToScalarType(dtype);
  return st ? c10::elementSize(*st) : 0;
}

absl::Status EncodeTensor(const at::Tensor& t, v1::Tensor* out) {
  const auto wire = ToWire(t.scalar_type());
  if (!wire) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor dtype ", c10::toString(t.scalar_type()),
                     " has no wire encoding"));
  }
  const at::Tensor c = t.to(at::kCPU).contiguous();
  out->set_dtype(*wire);
  out->clear_shape();
  for (int64_t d : c.sizes()) out->add_shape(d);
  out->set_data(static_cast<const char*>(c.data_ptr()), c.nbytes());
  return absl::OkStatus();
}

absl::StatusOr<at::Tensor> DecodeTensor(const v1::Tensor& in,
                                        absl::string_view field,
                                        const TensorExpectation& expect) {
  const auto st = ToScalarType(in.dtype());
  if (!st) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": unsupported dtype ", DTypeName(in.dtype())));
  }
  if (expect.dtype && *expect.dtype != in.dtype()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": dtype ", DTypeName(in.dtype()), ", expected ",
                     DTypeName(*expect.dtype)));
  }
  if (in.shape_size() > kMaxDims) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": ", in.shape_size(),
                                                   " dimensions, at most ",
                                                   kMaxDims, " supported"));
  }
  uint64_t numel = 1;
  for (int i = 0; i < in.shape_size(); ++i) {
    const int64_t d = in.shape(i);
    if (d < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": shape ", ShapeString(in.shape()),
                       " has negative dimension ", i));
    }
    if (d != 0 && numel > std::numeric_limits<int64_t>::max() /
                              static_cast<uint64_t>(d)) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": shape ", ShapeString(in.shape()),
                       " overflows the element count"));
    }
    numel *= static_cast<uint64_t>(d);
  }
  if (expect.shape) {
    const auto& want = *expect.shape;
    bool match = static_cast<int>(want.size()) == in.shape_size();
    for (int i = 0; match && i < in.shape_size(); ++i) {
      match = want[i] == -1 || want[i] == in.shape(i);
    }
    if (!match) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": shape ", ShapeString(in.shape()),
                       ", expected [", absl::StrJoin(want, ", "), "]"));
    }
  }
  const size_t elem = c10::elementSize(*st);
  if (numel > std::numeric_limits<uint64_t>::max() / elem ||
      numel * elem != static_cast<uint64_t>(in.data().size())) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": ", in.data().size(), " data bytes, but ",
                     DTypeName(in.dtype()), ShapeString(in.shape()), " needs ",
                     numel, " x ", elem, " bytes"));
  }
  if (*st == at::kBool) {
    // Only 0 and 1 are valid bools; anything else is undefined behaviour in
    // torch.
    const auto* bytes = reinterpret_cast<const uint8_t*>(in.data().data());
    for (size_t i = 0; i < in.data().size(); ++i) {
      if (bytes[i] > 1) {
        return absl::InvalidArgumentError(absl::StrCat(
            field, ": bool element ", i, " has byte value ", int{bytes[i]}));
      }
    }
  }
  std::vector<int64_t> sizes(in.shape().begin(), in.shape().end());
  at::Tensor t = at::empty(sizes, at::TensorOptions().dtype(*st));
  if (!in.data().empty())
    std::memcpy(t.data_ptr(), in.data().data(), in.data().size());
  return t;
}

}  // namespace rlvla3
