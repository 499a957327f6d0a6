// File: policies/tiny_vla.h
// -----------------------------------------------------------------------------
// TinyVLA: a small vision-language-action transformer that trains on a CPU.
//   per camera: conv stem (patchify, then 3x3) -> adaptive pooling to g x g
//               image tokens (+ position and camera embeddings)
//   instruction: token embeddings (+ positions)       proprio: one token
//   [ACT] readout token -> action head: K x 7 x 256 bin logits; value head
// All tokens of one sample attend to each other (pre-LN transformer).
//
// Two equivalent forward passes: padded (instructions padded to the batch's
// longest, pads masked out) and packed (samples concatenated without padding,
// linear layers run once over all real tokens, attention per sample, i.e. a
// block-diagonal mask). They give the same outputs within float tolerance;
// packing saves the padding's compute in the learner.
//
// Example:
//   TinyVLA net(TinyVLAOptions().vocab_size(tok.size()));
//   TinyVLAOutput out = net->forward(input, /*packed=*/true);
//   // out.logits [B, K, 7, 256], out.values [B]
// -----------------------------------------------------------------------------
#ifndef RLVLA3_POLICIES_TINY_VLA_H_
#define RLVLA3_POLICIES_TINY_VLA_H_

#include <torch/nn/cloneable.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <string>

#include "policies/policy.h"

namespace rlvla3 {

struct TinyVLAOptions {
  TORCH_ARG(int64_t,
            vocab_size) = 64;  // instruction vocabulary (TextTokenizer::size)
  TORCH_ARG(int64_t, max_text_len) = 16;   // instruction tokens kept
  TORCH_ARG(int64_t, d_model) = 128;       // token width
  TORCH_ARG(int64_t, heads) = 4;           // attention heads
  TORCH_ARG(int64_t, layers) = 2;          // transformer blocks
  TORCH_ARG(int64_t, mlp_ratio) = 4;       // MLP width / d_model
  TORCH_ARG(int64_t, patch) = 8;           // stem patch size (pixels)
  TORCH_ARG(int64_t, stem_channels) = 32;  // stem width
  TORCH_ARG(int64_t, grid) = 6;            // image tokens per camera = grid^2
  TORCH_ARG(int64_t, chunk) = 4;           // K: steps per action chunk
  TORCH_ARG(int64_t, bins) = 256;          // bins per action dimension
  TORCH_ARG(int64_t, action_dim) = 7;
  TORCH_ARG(int64_t, proprio_dim) = 8;
  // The value head reads a stopped-gradient copy of the fused features, so
  // the critic's loss never reshapes the (pretrained) trunk the actor uses.
  TORCH_ARG(bool, value_detach) = true;

  // A larger preset for GPUs.
  static TinyVLAOptions GpuPreset();
};

struct TinyVLAOutput {
  // float32 [B, K, action_dim, bins], scaled per action dimension by
  // exp(action_log_scale).
  at::Tensor logits;
  at::Tensor values;  // float32 [B]
};

// The packed sequence's rows grouped by sample length: samples of equal
// length attend as one batch. Built once per forward pass from the B+1
// segment offsets, used by every block.
struct PackedGroups {
  struct Group {
    int64_t length;   // tokens per sample in this group
    at::Tensor rows;  // int64 [G * length] row indexes, sample-major
  };
  std::vector<Group> groups;
  PackedGroups(const std::vector<int64_t>& offsets, const at::Device& device);
};

// One pre-LN transformer block whose attention runs either batched with an
// additive mask (padded) or per sample over packed segments.
class TransformerBlockImpl : public torch::nn::Cloneable<TransformerBlockImpl> {
 public:
  TransformerBlockImpl(int64_t d_model, int64_t heads, int64_t mlp_ratio);
  void reset() override;
  // x: [B, L, d]; mask: additive [B, 1, 1, L] (0 or -inf).
  at::Tensor ForwardPadded(const at::Tensor& x, const at::Tensor& mask);
  // x: [T, d] packed; groups: PackedGroups(offsets), shared by all blocks.
  at::Tensor ForwardPacked(const at::Tensor& x, const PackedGroups& groups);

 private:
  at::Tensor Attend(const at::Tensor& q, const at::Tensor& k,
                    const at::Tensor& v, const at::Tensor& mask) const;
  int64_t d_model_, heads_, mlp_ratio_;
  torch::nn::LayerNorm ln1_{nullptr}, ln2_{nullptr};
  torch::nn::Linear qkv_{nullptr}, proj_{nullptr}, fc1_{nullptr}, fc2_{nullptr};
};
TORCH_MODULE(TransformerBlock);

class TinyVLAImpl : public torch::nn::Cloneable<TinyVLAImpl> {
 public:
  explicit TinyVLAImpl(const TinyVLAOptions& options = {});
  void reset() override;
  TinyVLAOutput forward(const PolicyInput& in, bool packed);
  const TinyVLAOptions& options() const { return options_; }

 private:
  // Image tokens of both cameras: [B, 2 * grid^2, d].
  at::Tensor ImageTokens(const PolicyInput& in);
  TinyVLAOptions options_;
  torch::nn::Conv2d stem_a1_{nullptr}, stem_a2_{nullptr}, stem_w1_{nullptr},
      stem_w2_{nullptr};
  torch::nn::Embedding text_embed_{nullptr};
  torch::nn::Linear proprio_embed_{nullptr}, action_head_{nullptr};
  torch::nn::Sequential value_head_{nullptr};
  torch::nn::LayerNorm final_ln_{nullptr};
  torch::nn::ModuleList blocks_{nullptr};
  at::Tensor image_pos_, text_pos_, act_token_, type_embed_;
  // log of a per-dimension inverse temperature of the action logits (0 at
  // init): the categorical analogue of a Gaussian policy's learned log-std,
  // so RL can sharpen (or widen) each action dimension's distribution in one
  // parameter.
  at::Tensor action_log_scale_;
};
TORCH_MODULE(TinyVLA);

}  // namespace rlvla3

#endif  // RLVLA3_POLICIES_TINY_VLA_H_
