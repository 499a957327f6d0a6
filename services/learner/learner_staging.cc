// LearnerCore's micro-batch staging: a micro-batch's observations, taken
// tokens, masks, behaviour log-probs, advantages and weights gathered from
// the segments' slots through pinned host memory onto the learner's device
// (Prepare); the critic's values of the slots where segments were cut
// mid-episode (BootstrapValues, for SampleIntake's GAE); the policy-lag
// statistics of what is trained (RecordLags).
#include <torch/torch.h>

#include <algorithm>
#include <cstring>

#include "policies/device.h"
#include "services/learner/learner_core.h"

namespace rlvla3 {

PolicyInput GatherFromSegments(absl::Span<RolloutSegment* const> segs,
                               absl::Span<const int> slots,
                               const at::Tensor& text,
                               const at::Tensor& text_len, at::Tensor* tokens,
                               const at::Device& device) {
  const int64_t B = static_cast<int64_t>(segs.size());
  const SegmentShape& sh = segs.front()->shape;
  const at::TensorOptions bytes = HostStaging(device, torch::kByte);
  PolicyInput in;
  const int C = sh.num_cameras();
  in.images = torch::empty({B, C, sh.height, sh.width, 3}, bytes);
  uint8_t* images = in.images.data_ptr<uint8_t>();
  in.proprio =
      torch::empty({B, sh.proprio_dim}, HostStaging(device, torch::kFloat));
  at::Tensor task = torch::empty({B}, torch::kLong);  // host: an index
  const size_t img = segs.front()->camera_bytes;
  const size_t taken_row = segs.front()->taken_row();
  at::Tensor tok;  // bytes: one per bin index, or four per float32
  if (tokens != nullptr) {
    tok = torch::empty({B, sh.chunk, sh.action_dim * sh.taken_bytes}, bytes);
  }
  for (int64_t b = 0; b < B; ++b) {
    RolloutSegment* s = segs[b];
    const int t = slots[b];
    for (int c = 0; c < C; ++c) {
      std::memcpy(images + (b * C + c) * img, s->camera_at(c, t), img);
    }
    std::memcpy(in.proprio.data_ptr<float>() + b * sh.proprio_dim,
                s->proprio_at(t), sizeof(float) * sh.proprio_dim);
    task.data_ptr<int64_t>()[b] = s->task;
    if (tokens != nullptr) {
      std::memcpy(tok.data_ptr<uint8_t>() + b * taken_row, s->tokens_at(t),
                  taken_row);
    }
  }
  // Gathered into staging memory (pinned for a GPU), as the rest.
  in.text = torch::empty({B, text.size(1)}, HostStaging(device, torch::kLong));
  torch::index_select_out(in.text, text, 0, task);
  in.text_len = torch::empty({B}, HostStaging(device, torch::kLong));
  torch::index_select_out(in.text_len, text_len, 0, task);
  if (tokens != nullptr && sh.taken_bytes == 1) {
    *tokens = torch::empty(tok.sizes(), HostStaging(device, torch::kLong));
    tokens->copy_(tok);
  } else if (tokens != nullptr) {
    *tokens = tok.view(torch::kFloat);  // [B, K, A] as sampled
  }
  return in;
}

PolicyInput LearnerCore::Gather(const std::vector<SampleRef>& batch,
                                at::Tensor* tokens) {
  std::vector<RolloutSegment*> segs;
  std::vector<int> slots;
  for (const SampleRef& r : batch) {
    segs.push_back(r.seg->rollout);
    slots.push_back(r.t);
  }
  const at::Device& device = options_.device;
  PolicyInput in =
      GatherFromSegments(segs, slots, text_, text_len_, tokens, device);
  if (tokens != nullptr) *tokens = ToDevice(*tokens, device);
  return ToDevice(in, device);
}

void LearnerCore::BootstrapValues(const std::vector<SampleRef>& slots,
                                  std::vector<float>* values) {
  torch::NoGradGuard no_grad;
  PolicyInput in = Gather(slots, nullptr);
  at::Tensor v;
  {
    AutocastGuard autocast(options_.device, options_.bf16);
    v = policy_->Values(in);
  }
  v = v.to(torch::kCPU, torch::kFloat).contiguous();
  std::memcpy(values->data(), v.data_ptr<float>(),
              sizeof(float) * slots.size());
}

LearnerCore::MicroBatch LearnerCore::Prepare(
    const std::vector<SampleRef>& batch) {
  const int64_t B = static_cast<int64_t>(batch.size());
  const SegmentShape& sh = batch.front().seg->rollout->shape;
  const at::Device& device = options_.device;
  const at::TensorOptions host = HostStaging(device, torch::kFloat);
  MicroBatch mb;
  mb.in = Gather(batch, &mb.tokens);
  mb.mask = torch::zeros({B, sh.chunk}, host);
  at::Tensor behav_k = torch::empty({B, sh.chunk}, host);
  mb.adv = torch::empty({B}, host);
  mb.ret = torch::empty({B}, host);
  mb.weight = torch::empty({B}, host);
  auto m = mb.mask.accessor<float, 2>();
  for (int64_t b = 0; b < B; ++b) {
    const RolloutSegment* s = batch[b].seg->rollout;
    const int t = batch[b].t;
    const int exec = std::max<int>(1, s->executed[t]);
    for (int k = 0; k < exec && k < sh.chunk; ++k) m[b][k] = 1.0f;
    std::memcpy(behav_k.data_ptr<float>() + b * sh.chunk, s->log_probs_at(t),
                sizeof(float) * sh.chunk);
    mb.adv.data_ptr<float>()[b] = batch[b].seg->advantages[t];
    mb.ret.data_ptr<float>()[b] = batch[b].seg->returns[t];
    mb.weight.data_ptr<float>()[b] = batch[b].weight;
  }
  mb.mask = ToDevice(mb.mask, device);
  mb.behav_steps = ToDevice(behav_k, device) * mb.mask;
  mb.behav = mb.behav_steps.sum(1);
  mb.adv = ToDevice(mb.adv, device);
  mb.ret = ToDevice(mb.ret, device);
  mb.weight = ToDevice(mb.weight, device);
  return mb;
}

void LearnerCore::RecordLags(const std::vector<SampleRef>& batch) {
  for (size_t b = 0; b < batch.size(); ++b) {
    const RolloutSegment* s = batch[b].seg->rollout;
    const double lag = static_cast<double>(
        version_ - std::min(version_, s->versions[batch[b].t]));
    if (samples_trained_ == 0 && b == 0) {
      lag_min_ = lag_max_ = lag;
    } else {
      lag_min_ = std::min(lag_min_, lag);
      lag_max_ = std::max(lag_max_, lag);
    }
    lag_sum_ += lag;
    const size_t bucket = static_cast<size_t>(lag);
    if (lag_hist_.size() <= bucket) lag_hist_.resize(bucket + 1, 0);
    ++lag_hist_[bucket];
  }
}

}  // namespace rlvla3
