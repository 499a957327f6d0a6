// File: services/plan/memory_model.h
// -----------------------------------------------------------------------------
// How much memory each pod of a plan needs (issue 62): a learner rank's
// device memory (fp32 weights, gradients, AdamW's two moments sharded over
// the ranks as ZeRO-1 shards them, the reducer's flat buckets, activations
// of one micro-batch kept for backward, the segments it stages), an
// inference server's (weights, a bf16 copy under autocast, one batch's
// transient activations and inputs) and a rollout pod's host memory (its
// envs as measured, its segment buffers).
//
// Activations are counted for TinyVLA's shape, per sample, in the width of
// the learner's precision (4 bytes fp32, 2 bf16), never fitted:
//   tokens S = cameras x grid^2 + 1 (proprio) + text + 1 (act)
//   per block: 16 S d (layer norms, qkv, attention out, residual, the MLP's
//              4d hidden before and after its GELU) + 2 heads S^2 (scores
//              and their softmax)
//   stems, per camera: 3 H W (the image as floats) + 2 C1 H W / p^2 (conv
//              and GELU) + d H W / p^2 (the second conv)
//   heads: 3 chunk x action_dim x bins (logits, log-softmax, its gradient)
// Larger policies follow the same count with their own S, d, layers and
// heads (docs/planning.md states the assumptions).
//
// Example:
//   PolicyShape p;  p.d_model = 768;  p.layers = 14;  ...
//   MemoryEstimate m = LearnerMemory(p, learner);
//   m.total_bytes ...
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_PLAN_MEMORY_MODEL_H_
#define RLVLA3_SERVICES_PLAN_MEMORY_MODEL_H_

#include <cstdint>
#include <string>
#include <vector>

namespace rlvla3 {

struct PolicyShape {
  int64_t parameters = 0;
  int64_t d_model = 128, layers = 2, heads = 4, mlp_ratio = 4;
  int64_t cameras = 2, grid = 6, text_len = 16;
  int64_t image_height = 64, image_width = 64, patch = 8, stem_channels = 32;
  int64_t chunk = 4, action_dim = 7, bins = 256;
  int64_t Tokens() const { return cameras * grid * grid + text_len + 2; }
};

// Bytes of activations one sample keeps for backward (see the file
// comment) at `bytes_per_value` (4 fp32, 2 bf16).
double ActivationBytesPerSample(const PolicyShape& p, double bytes_per_value);

struct LearnerMemoryOptions {
  int ranks = 1;
  int micro_batch = 64;
  int global_batch = 128;
  bool bf16 = false;
  double segment_bytes_per_sample = 0;  // observations a sample stages
};

struct InferenceMemoryOptions {
  int max_batch = 16;
  bool bf16 = false;
  double input_bytes_per_obs = 0;
};

// One named part and its bytes.
struct MemoryPart {
  std::string name;
  double bytes = 0;
};

struct MemoryEstimate {
  std::vector<MemoryPart> parts;
  double total_bytes = 0;
  double Of(const std::string& name) const;
};

MemoryEstimate LearnerMemory(const PolicyShape& p,
                             const LearnerMemoryOptions& o);
MemoryEstimate InferenceMemory(const PolicyShape& p,
                               const InferenceMemoryOptions& o);
// A rollout pod's host memory: envs x measured bytes per env, and a
// segment buffer of rollout_len observations per env.
MemoryEstimate RolloutHostMemory(int envs, double host_bytes_per_env,
                                 int rollout_len, double observation_bytes);

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_PLAN_MEMORY_MODEL_H_
