#include "services/plan/memory_model.h"

#include <algorithm>
#include <utility>

namespace rlvla3 {
namespace {

void Add(MemoryEstimate* m, std::string name, double bytes) {
  m->parts.push_back({std::move(name), bytes});
  m->total_bytes += bytes;
}

}  // namespace

double MemoryEstimate::Of(const std::string& name) const {
  for (const MemoryPart& p : parts)
    if (p.name == name) return p.bytes;
  return 0;
}

double ActivationBytesPerSample(const PolicyShape& p, double bytes_per_value) {
  const double S = double(p.Tokens()), d = double(p.d_model);
  const double blocks =
      double(p.layers) * (16 * S * d + 2 * double(p.heads) * S * S);
  const double pixels = double(p.image_height) * double(p.image_width);
  const double patches = pixels / double(p.patch * p.patch);
  const double stems =
      double(p.cameras) *
      (3 * pixels + 2 * double(p.stem_channels) * patches + d * patches);
  const double heads = 3.0 * double(p.chunk * p.action_dim * p.bins);
  return bytes_per_value * (blocks + stems + heads);
}

MemoryEstimate LearnerMemory(const PolicyShape& p,
                             const LearnerMemoryOptions& o) {
  MemoryEstimate m;
  const double P = double(p.parameters);
  const int ranks = std::max(1, o.ranks);
  Add(&m, "weights", 4 * P);  // fp32 master weights
  Add(&m, "gradients", 4 * P);
  Add(&m, "adamw", 8 * P / ranks);  // two fp32 moments, ZeRO-1 shards
  if (ranks > 1) Add(&m, "reducer buckets", 4 * P);
  if (o.bf16) Add(&m, "bf16 weight copies", 2 * P);  // autocast's cache
  Add(&m, "activations",
      double(o.micro_batch) * ActivationBytesPerSample(p, o.bf16 ? 2 : 4));
  Add(&m, "segments",
      o.segment_bytes_per_sample * double(o.global_batch) / ranks);
  return m;
}

MemoryEstimate InferenceMemory(const PolicyShape& p,
                               const InferenceMemoryOptions& o) {
  MemoryEstimate m;
  const double P = double(p.parameters);
  Add(&m, "weights", 4 * P);
  if (o.bf16) Add(&m, "bf16 weight copies", 2 * P);
  // Under inference mode nothing is kept for backward: about one block's
  // worth is alive at a time (two activations of its widest, the MLP).
  const double S = double(p.Tokens()), d = double(p.d_model);
  const double live =
      2 * double(p.mlp_ratio) * S * d + 2 * double(p.heads) * S * S;
  Add(&m, "activations", double(o.max_batch) * live * (o.bf16 ? 2 : 4));
  Add(&m, "inputs", double(o.max_batch) * o.input_bytes_per_obs);
  return m;
}

MemoryEstimate RolloutHostMemory(int envs, double host_bytes_per_env,
                                 int rollout_len, double observation_bytes) {
  MemoryEstimate m;
  Add(&m, "envs", double(envs) * host_bytes_per_env);
  Add(&m, "segments", double(envs) * rollout_len * observation_bytes);
  return m;
}

}  // namespace rlvla3
