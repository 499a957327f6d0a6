#include "services/runs/stage_drivers.h"

#include <c10/core/InferenceMode.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "envs/sim_env.h"
#include "policies/device.h"
#include "runtime/channels/rollout_segment.h"
#include "services/learner/learner_core.h"

namespace rlvla3 {
namespace {

// The run's own instructions (its table's rows, [T, L] with lengths [T]),
// row i % T for sample i: the text a batch really carries, whose length sets
// the policy's sequence. Without a table: a full-length instruction of ids
// within the tokenizer's vocabulary.
struct Instructions {
  at::Tensor text, len;  // [B, L], [B]
};
Instructions RunInstructions(const at::Tensor& table, const at::Tensor& lengths,
                             int64_t B, const EngineParts& parts) {
  if (table.defined() && table.dim() == 2 && table.size(0) > 0 &&
      lengths.defined() && lengths.numel() == table.size(0)) {
    const at::Tensor rows = torch::arange(B, torch::kLong) % table.size(0);
    return {table.to(torch::kCPU).index_select(0, rows),
            lengths.to(torch::kCPU).index_select(0, rows)};
  }
  const int64_t L = parts.policy->max_text_len();
  const int64_t high =
      std::clamp<int64_t>(parts.tokenizer.size(), int64_t{1}, int64_t{8});
  return {torch::randint(std::min<int64_t>(2, high - 1), high, {B, L},
                         torch::kLong),
          torch::full({B}, L, torch::kLong)};
}

// A batch of random observations in staging memory (pinned for a GPU), with
// the run's instructions.
PolicyInput SyntheticInput(const InferenceServerOptions& o, int64_t B,
                           const Instructions& words,
                           const at::Device& device) {
  const int64_t h = o.image_height, w = o.image_width;
  PolicyInput in;
  in.images =
      torch::empty({B, o.cameras, h, w, 3}, HostStaging(device, torch::kByte))
          .random_(0, 256);
  in.proprio =
      torch::empty({B, kProprioDim}, HostStaging(device, torch::kFloat))
          .normal_();
  in.text = torch::empty(words.text.sizes(), HostStaging(device, torch::kLong))
                .copy_(words.text);
  in.text_len =
      torch::empty({B}, HostStaging(device, torch::kLong)).copy_(words.len);
  return in;
}

// Taken actions a head could have drawn: a bin each dimension has (one byte,
// or a float32 index above 256 bins), TinyVLA's uint8 bins when `bins` is
// empty and one byte is taken, else a Gaussian sample.
void FillTaken(const std::vector<int64_t>& bins, RolloutSegment* s,
               std::mt19937* rng) {
  const int A = s->shape.action_dim;
  const size_t n = s->tokens.size() / s->shape.taken_bytes;
  std::normal_distribution<float> gaussian(0.0f, 0.5f);
  for (size_t i = 0; i < n; ++i) {
    const int d = static_cast<int>(i % A);
    const uint32_t draw = (*rng)();
    if (s->shape.taken_bytes == 1) {
      const int64_t count = bins.empty() ? 256 : bins[d];
      s->tokens[i] = static_cast<uint8_t>(draw % count);
      continue;
    }
    const float v =
        bins.empty() ? gaussian(*rng) : static_cast<float>(draw % bins[d]);
    std::memcpy(s->tokens.data() + i * sizeof(float), &v, sizeof(float));
  }
}

}  // namespace

struct InferenceStageDriver::Impl {
  std::shared_ptr<TrainablePolicy> policy;
  at::Device device{at::kCPU};
  bool bf16 = false;
  int64_t batch = 0;
  PolicyInput in;
};

InferenceStageDriver::InferenceStageDriver(const LocalEngineOptions& o,
                                           const EngineParts& parts)
    : impl_(std::make_unique<Impl>()) {
  const InferenceServerOptions& i = o.inference;
  impl_->policy = parts.policy->Snapshot(0);
  impl_->device = i.device;
  impl_->policy->To(impl_->device);
  impl_->bf16 = i.bf16;
  impl_->batch = std::min<int64_t>(static_cast<int64_t>(i.batcher.max_batch),
                                   o.rollout.pool.num_envs);
  impl_->in = SyntheticInput(
      i, impl_->batch, RunInstructions(i.text, i.text_len, impl_->batch, parts),
      impl_->device);
}

InferenceStageDriver::~InferenceStageDriver() = default;

int64_t InferenceStageDriver::batch_size() const { return impl_->batch; }

void InferenceStageDriver::Batch() {
  c10::InferenceMode inference_mode;  // as the inference server
  AutocastGuard autocast(impl_->device, impl_->bf16);
  impl_->policy->Act(ToDevice(impl_->in, impl_->device), false)
      .values.to(torch::kCPU);
}

struct LearnerStageDriver::Impl {
  std::unique_ptr<LearnerCore> core;
  SegmentShape shape;
  std::vector<std::unique_ptr<RolloutSegment>> segs;
  std::mt19937 rng;
};

LearnerStageDriver::LearnerStageDriver(const LocalEngineOptions& o,
                                       const EngineParts& parts)
    : impl_(std::make_unique<Impl>()) {
  // The run's instruction table; segment i takes row i % T.
  const at::Tensor& table = o.learner.text;
  const int64_t T = table.defined() && table.dim() == 2 ? table.size(0) : 0;
  const Instructions words = RunInstructions(o.learner.text, o.learner.text_len,
                                             std::max<int64_t>(1, T), parts);
  const int envs = o.rollout.pool.num_envs;
  impl_->shape = o.segment_shape;
  LearnerOptions lo = o.learner.core;  // its devices, precision, AdamW, epochs
  lo.algorithm = "ppo";                // synthetic segments: no GRPO groups
  lo.global_units = int64_t{envs} * impl_->shape.capacity;
  lo.max_policy_lag = 1000000;
  impl_->core =
      std::make_unique<LearnerCore>(parts.policy, words.text, words.len, lo, 0);
  impl_->rng.seed(static_cast<uint32_t>(o.rollout.seed));
  for (int i = 0; i < envs; ++i) {
    auto s = std::make_unique<RolloutSegment>(impl_->shape);
    for (auto& b : s->images) b = static_cast<uint8_t>(impl_->rng());
    FillTaken(o.action_bins, s.get(), &impl_->rng);
    s->task = T > 0 ? static_cast<int>(i % T) : 0;
    impl_->segs.push_back(std::move(s));
  }
}

LearnerStageDriver::~LearnerStageDriver() = default;

int64_t LearnerStageDriver::Step() {
  std::vector<RolloutSegment*> batch;
  for (auto& s : impl_->segs) {
    s->Clear();  // keeps its task row
    s->n = impl_->shape.capacity;
    s->has_bootstrap = true;
    std::fill(s->executed.begin(), s->executed.end(), 1);
    std::fill(s->log_probs.begin(), s->log_probs.end(), -5.0f);
    for (int t = 0; t < s->n; ++t)
      s->rewards[t] = static_cast<float>(impl_->rng() % 2);
    batch.push_back(s.get());
  }
  LearnerCore& core = *impl_->core;
  core.Add(batch);
  while (core.CanTrain()) core.TrainMicroBatch();
  int64_t trained = 0;
  if (core.ReadyToStep()) trained = core.Step().samples;
  core.MakeSnapshot();  // the publish cost is the learner's too
  core.TakeConsumed();
  return trained;
}

}  // namespace rlvla3
