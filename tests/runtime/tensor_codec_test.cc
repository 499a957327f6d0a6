#include "runtime/tensor_codec.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "rlvla3/v1/tensor.pb.h"

namespace rlvla3 {
namespace {

TEST(TensorCodec, RoundTripsEveryDtypeBitExactly) {
  torch::manual_seed(0);
  const std::vector<at::ScalarType> types = {
      at::kByte, at::kChar,     at::kShort, at::kInt,   at::kLong,
      at::kHalf, at::kBFloat16, at::kFloat, at::kDouble};
  for (auto t : types) {
    at::Tensor x = (torch::rand({3, 5, 2}) * 100).to(t);
    v1::Tensor wire;
    ASSERT_TRUE(EncodeTensor(x, &wire).ok());
    absl::StatusOr<at::Tensor> y = DecodeTensor(wire, "x");
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_EQ(y->scalar_type(), t);
    EXPECT_EQ(y->sizes(), x.sizes());
    EXPECT_TRUE(torch::equal(*y, x)) << c10::toString(t);
  }
  at::Tensor b = torch::rand({7}) > 0.5;
  v1::Tensor wire;
  ASSERT_TRUE(EncodeTensor(b, &wire).ok());
  EXPECT_TRUE(torch::equal(*DecodeTensor(wire, "b"), b));
}

TEST(TensorCodec, EncodesNonContiguousViewsAndScalars) {
  at::Tensor x = torch::arange(12, torch::kFloat).reshape({3, 4}).t();
  v1::Tensor wire;
  ASSERT_TRUE(EncodeTensor(x, &wire).ok());
  EXPECT_EQ(wire.data().size(), 12 * sizeof(float));
  EXPECT_TRUE(torch::equal(*DecodeTensor(wire, "x"), x));
  ASSERT_TRUE(EncodeTensor(torch::tensor(3.5), &wire).ok());
  EXPECT_EQ(wire.shape_size(), 0);
  EXPECT_EQ(DecodeTensor(wire, "s")->item<double>(), 3.5);
}

TEST(TensorCodec, ByteLengthMismatchNamesTheField) {
  v1::Tensor wire;
  wire.set_dtype(v1::DTYPE_UINT8);
  wire.add_shape(128);
  wire.add_shape(128);
  wire.add_shape(3);
  wire.set_data(std::string(100, '\0'));
  absl::StatusOr<at::Tensor> t =
      DecodeTensor(wire, "observation.images[0].rgb");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(t.status().message(),
            "observation.images[0].rgb: 100 data bytes, but DTYPE_UINT8[128, "
            "128, 3] needs "
            "49152 x 1 bytes");
}

TEST(TensorCodec, RejectsBadDtypesShapesAndBools) {
  v1::Tensor wire;
  wire.set_dtype(v1::DTYPE_UNSPECIFIED);
  EXPECT_EQ(DecodeTensor(wire, "a").status().message(),
            "a: unsupported dtype DTYPE_UNSPECIFIED");
  wire.set_dtype(static_cast<v1::DType>(77));
  EXPECT_EQ(DecodeTensor(wire, "a").status().message(),
            "a: unsupported dtype dtype code 77");

  wire.set_dtype(v1::DTYPE_FLOAT32);
  wire.add_shape(2);
  wire.add_shape(-1);
  EXPECT_EQ(DecodeTensor(wire, "b").status().message(),
            "b: shape [2, -1] has negative dimension 1");

  wire.clear_shape();
  for (int i = 0; i < 4; ++i) wire.add_shape(int64_t{1} << 40);
  EXPECT_EQ(DecodeTensor(wire, "c").status().message(),
            "c: shape [1099511627776, 1099511627776, 1099511627776, "
            "1099511627776] overflows "
            "the element count");

  wire.clear_shape();
  for (int i = 0; i < 40; ++i) wire.add_shape(1);
  EXPECT_FALSE(DecodeTensor(wire, "d").ok());

  v1::Tensor flags;
  flags.set_dtype(v1::DTYPE_BOOL);
  flags.add_shape(3);
  flags.set_data(std::string("\x01\x00\x07", 3));
  EXPECT_EQ(DecodeTensor(flags, "dones").status().message(),
            "dones: bool element 2 has byte value 7");
}

TEST(TensorCodec, ChecksTheCallersExpectation) {
  v1::Tensor wire;
  ASSERT_TRUE(EncodeTensor(torch::zeros({4, 8}), &wire).ok());
  EXPECT_TRUE(
      DecodeTensor(wire, "p", {v1::DTYPE_FLOAT32, std::vector<int64_t>{-1, 8}})
          .ok());
  EXPECT_EQ(DecodeTensor(wire, "p", {v1::DTYPE_INT64, std::nullopt})
                .status()
                .message(),
            "p: dtype DTYPE_FLOAT32, expected DTYPE_INT64");
  EXPECT_EQ(DecodeTensor(wire, "p", {std::nullopt, std::vector<int64_t>{4, 7}})
                .status()
                .message(),
            "p: shape [4, 8], expected [4, 7]");
}

TEST(TensorCodec, ComplexHasNoWireEncoding) {
  v1::Tensor wire;
  absl::Status s = EncodeTensor(torch::zeros({2}, torch::kComplexFloat), &wire);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(WireDTypeSize(v1::DTYPE_BFLOAT16), 2u);
  EXPECT_EQ(WireDTypeSize(0), 0u);
}

}  // namespace
}  // namespace rlvla3
