#include "policies/tiny_vla.h"

#include <torch/torch.h>
#include <torch/version.h>

#include <cmath>
#include <limits>
#include <map>

#include "policies/device.h"

namespace rlvla3 {
namespace {

constexpr int64_t kCameras = 2;
constexpr int64_t kTypes = 4;  // image, proprio, text, [ACT]
constexpr int64_t kTypeImage = 0, kTypeProprio = 1, kTypeText = 2, kTypeAct = 3;
constexpr double kInitStd = 0.02;

// uint8 [B, H, W, 3] -> float [B, 3, H, W] in [-0.5, 0.5].
at::Tensor ImageToFloat(const at::Tensor& img) {
  return img.permute({0, 3, 1, 2}).to(at::kFloat).div(255.0).sub(0.5);
}

}  // namespace

TinyVLAOptions TinyVLAOptions::GpuPreset() {
  return TinyVLAOptions()
      .d_model(512)
      .heads(8)
      .layers(8)
      .grid(8)
      .stem_channels(64)
      .chunk(8);
}

TransformerBlockImpl::TransformerBlockImpl(int64_t d_model, int64_t heads,
                                           int64_t mlp_ratio)
    : d_model_(d_model), heads_(heads), mlp_ratio_(mlp_ratio) {
  reset();
}

void TransformerBlockImpl::reset() {
  ln1_ = register_module(
      "ln1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d_model_})));
  ln2_ = register_module(
      "ln2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d_model_})));
  qkv_ = register_module("qkv", torch::nn::Linear(d_model_, 3 * d_model_));
  proj_ = register_module("proj", torch::nn::Linear(d_model_, d_model_));
  fc1_ = register_module("fc1",
                         torch::nn::Linear(d_model_, mlp_ratio_ * d_model_));
  fc2_ = register_module("fc2",
                         torch::nn::Linear(mlp_ratio_ * d_model_, d_model_));
}

at::Tensor TransformerBlockImpl::Attend(const at::Tensor& q,
                                        const at::Tensor& k,
                                        const at::Tensor& v,
                                        const at::Tensor& mask) const {
  // q, k, v: [B, H, L, dh]
#if TORCH_VERSION_MAJOR >= 2
  // Fused (flash without a mask, memory-efficient with one; the math kernel
  // where neither fits). The additive mask in the scores' type.
  return at::scaled_dot_product_attention(
      q, k, v,
      mask.defined() ? c10::optional<at::Tensor>(mask.to(q.scalar_type()))
                     : c10::nullopt);
#else
  const double scale = 1.0 / std::sqrt(static_cast<double>(d_model_ / heads_));
  at::Tensor scores = torch::matmul(q, k.transpose(-2, -1)).mul(scale);
  if (mask.defined()) scores = scores + mask;
  return torch::matmul(torch::softmax(scores, -1), v);
#endif
}

at::Tensor TransformerBlockImpl::ForwardPadded(const at::Tensor& x,
                                               const at::Tensor& mask) {
  const int64_t B = x.size(0), L = x.size(1), dh = d_model_ / heads_;
  at::Tensor qkv =
      qkv_(ln1_(x)).view({B, L, 3, heads_, dh}).permute({2, 0, 3, 1, 4});
  at::Tensor a = Attend(qkv[0], qkv[1], qkv[2], mask);  // [B, H, L, dh]
  at::Tensor h = x + proj_(a.transpose(1, 2).reshape({B, L, d_model_}));
  return h + fc2_(torch::gelu(fc1_(ln2_(h))));
}

PackedGroups::PackedGroups(const std::vector<int64_t>& offsets,
                           const at::Device& device) {
  // Attention is block-diagonal: each sample attends to itself only. Samples
  // of equal length are batched together (instructions have few distinct
  // lengths), so the cost is a handful of batched matmuls, not one per sample.
  std::map<int64_t, std::vector<int64_t>> by_length;  // length -> token rows
  for (size_t b = 0; b + 1 < offsets.size(); ++b) {
    auto& rows = by_length[offsets[b + 1] - offsets[b]];
    for (int64_t r = offsets[b]; r < offsets[b + 1]; ++r) rows.push_back(r);
  }
  for (const auto& [length, rows] : by_length) {
    groups.push_back({length, HostValuesToDevice(rows, device)});
  }
}

at::Tensor TransformerBlockImpl::ForwardPacked(const at::Tensor& x,
                                               const PackedGroups& groups) {
  const int64_t dh = d_model_ / heads_;
  at::Tensor qkv = qkv_(ln1_(x));  // [T, 3d], one matmul over every real token
  at::Tensor attended = torch::empty({x.size(0), d_model_}, x.options());
  for (const auto& g : groups.groups) {
    const int64_t L = g.length, G = g.rows.numel() / L;
    at::Tensor seg = qkv.index_select(0, g.rows)
                         .view({G, L, 3, heads_, dh})
                         .permute({2, 0, 3, 1, 4});  // [3, G, H, L, dh]
    at::Tensor out = Attend(seg[0], seg[1], seg[2], at::Tensor())
                         .transpose(1, 2)
                         .reshape({G * L, d_model_});
    // (Under bf16 autocast the attention's output is bf16, the stream not.)
    attended = attended.index_copy(0, g.rows, out.to(x.scalar_type()));
  }
  at::Tensor h = x + proj_(attended);
  return h + fc2_(torch::gelu(fc1_(ln2_(h))));
}

TinyVLAImpl::TinyVLAImpl(const TinyVLAOptions& options) : options_(options) {
  reset();
}

void TinyVLAImpl::reset() {
  const auto& o = options_;
  const int64_t d = o.d_model();
  auto stem1 = [&] {
    return torch::nn::Conv2d(
        torch::nn::Conv2dOptions(3, o.stem_channels(), o.patch())
            .stride(o.patch()));
  };
  auto stem2 = [&] {
    return torch::nn::Conv2d(
        torch::nn::Conv2dOptions(o.stem_channels(), d, 3).padding(1));
  };
  stem_a1_ = register_module("stem_agentview_1", stem1());
  stem_a2_ = register_module("stem_agentview_2", stem2());
  stem_w1_ = register_module("stem_wrist_1", stem1());
  stem_w2_ = register_module("stem_wrist_2", stem2());
  text_embed_ =
      register_module("text_embed", torch::nn::Embedding(o.vocab_size(), d));
  proprio_embed_ =
      register_module("proprio_embed", torch::nn::Linear(o.proprio_dim(), d));
  blocks_ = register_module("blocks", torch::nn::ModuleList());
  for (int64_t i = 0; i < o.layers(); ++i) {
    blocks_->push_back(TransformerBlock(d, o.heads(), o.mlp_ratio()));
  }
  final_ln_ = register_module(
      "final_ln", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d})));
  action_head_ = register_module(
      "action_head",
      torch::nn::Linear(d, o.chunk() * o.action_dim() * o.bins()));
  // Two layers: with a stopped gradient the head must do its own fitting.
  value_head_ = register_module(
      "value_head",
      torch::nn::Sequential(torch::nn::Linear(d, d), torch::nn::Tanh(),
                            torch::nn::Linear(d, 1)));
  image_pos_ = register_parameter(
      "image_pos", torch::randn({kCameras, o.grid() * o.grid(), d}) * kInitStd);
  text_pos_ = register_parameter(
      "text_pos", torch::randn({o.max_text_len(), d}) * kInitStd);
  act_token_ = register_parameter("act_token", torch::randn({d}) * kInitStd);
  type_embed_ =
      register_parameter("type_embed", torch::randn({kTypes, d}) * kInitStd);
  action_log_scale_ =
      register_parameter("action_log_scale", torch::zeros({o.action_dim()}));
}

at::Tensor TinyVLAImpl::ImageTokens(const PolicyInput& in) {
  const int64_t g = options_.grid();
  auto encode = [&](const at::Tensor& img, torch::nn::Conv2d& c1,
                    torch::nn::Conv2d& c2) {
    at::Tensor x = torch::gelu(c1(ImageToFloat(img)));
    x = torch::adaptive_avg_pool2d(c2(x), {g, g});  // [B, d, g, g]
    return x.flatten(2).transpose(1, 2);            // [B, g*g, d]
  };
  // Cameras agentview and wrist, each [B, H, W, 3] dense as a camera alone
  // (the layout its convolutions were measured at).
  TORCH_CHECK(in.images.dim() == 5 && in.images.size(1) == 2, "images ",
              in.images.sizes(),
              ": TinyVLA reads two cameras, agentview "
              "and wrist ([B, 2, H, W, 3])");
  const at::Tensor agentview = in.images.select(1, 0).contiguous();
  const at::Tensor wrist = in.images.select(1, 1).contiguous();
  at::Tensor a = encode(agentview, stem_a1_, stem_a2_) + image_pos_[0];
  at::Tensor w = encode(wrist, stem_w1_, stem_w2_) + image_pos_[1];
  return torch::cat({a, w}, 1) + type_embed_[kTypeImage];
}

TinyVLAOutput TinyVLAImpl::forward(const PolicyInput& in, bool packed) {
  const auto& o = options_;
  const int64_t B = in.proprio.size(0), d = o.d_model();
  at::Tensor lens = in.text_len.to(at::kCPU).clamp_max(o.max_text_len());
  const int64_t L =
      std::max<int64_t>(1, lens.numel() == 0 ? 1 : lens.max().item<int64_t>());
  at::Tensor text_ids =
      in.text.narrow(1, 0, std::min<int64_t>(L, in.text.size(1)));
  at::Tensor text = text_embed_(text_ids) +
                    text_pos_.narrow(0, 0, text_ids.size(1)) +
                    type_embed_[kTypeText];  // [B, L, d]
  at::Tensor img = ImageTokens(in);          // [B, 2g^2, d]
  at::Tensor prop =
      (proprio_embed_(in.proprio) + type_embed_[kTypeProprio]).unsqueeze(1);
  at::Tensor act = (act_token_ + type_embed_[kTypeAct]).expand({B, 1, d});
  at::Tensor x = torch::cat({img, prop, text, act}, 1);  // [B, S, d]
  const int64_t S = x.size(1), text_start = img.size(1) + 1;
  const int64_t Lt = text_ids.size(1);
  // With every instruction at the batch's longest there is no padding: one
  // batched pass without a mask (packed and padded are then the same).
  const bool padding = lens.numel() > 0 && lens.min().item<int64_t>() < Lt;
  at::Tensor readout;
  if (!padding || !packed) {
    at::Tensor mask;
    if (padding) {
      // Mask padded text keys: position text_start + j is padding when
      // j >= len. Built on the host (where the lengths are), one copy.
      at::Tensor j =
          torch::arange(S, at::kLong).unsqueeze(0) - text_start;  // [1, S]
      at::Tensor pad = (j >= lens.unsqueeze(1)) & (j >= 0) & (j < Lt);
      mask = ToDevice(
          torch::zeros({B, 1, 1, S}, HostStaging(x.device(), at::kFloat))
              .masked_fill_(pad.view({B, 1, 1, S}),
                            -std::numeric_limits<float>::infinity()),
          x.device());
    }
    for (auto& blk : *blocks_)
      x = blk->as<TransformerBlock>()->ForwardPadded(x, mask);
    readout = x.select(1, S - 1);
  } else {
    // The real tokens' rows of the padded [B * S, d] in one gather (its
    // backward is one scatter-add, not a slice per sample).
    std::vector<int64_t> rows, offsets = {0}, ends;
    rows.reserve(static_cast<size_t>(B * S));
    const auto* len = lens.data_ptr<int64_t>();
    for (int64_t b = 0; b < B; ++b) {
      const int64_t real =
          text_start + std::min(len[b], Lt);  // image, proprio, text
      for (int64_t r = 0; r < real; ++r) rows.push_back(b * S + r);
      rows.push_back(b * S + S - 1);  // [ACT]
      offsets.push_back(offsets.back() + real + 1);
      ends.push_back(offsets.back() - 1);
    }
    x = x.flatten(0, 1).index_select(0, HostValuesToDevice(rows, x.device()));
    const PackedGroups groups(offsets, x.device());
    for (auto& blk : *blocks_)
      x = blk->as<TransformerBlock>()->ForwardPacked(x, groups);
    readout = x.index_select(0, HostValuesToDevice(ends, x.device()));
  }
  readout = final_ln_(readout);
  TinyVLAOutput out;
  out.logits =
      action_head_(readout).view({B, o.chunk(), o.action_dim(), o.bins()}) *
      action_log_scale_.exp().view({1, 1, o.action_dim(), 1});
  out.values =
      value_head_->forward(o.value_detach() ? readout.detach() : readout)
          .squeeze(-1);
  return out;
}

}  // namespace rlvla3
