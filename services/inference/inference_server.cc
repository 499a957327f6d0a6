#include "services/inference/inference_server.h"

#include <c10/core/InferenceMode.h>
#include <torch/torch.h>

#include <chrono>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "policies/device.h"
#include "policies/serving_weights.h"
#include "runtime/steady_clock.h"
#include "runtime/torch_status.h"

namespace rlvla3 {
namespace {

// The batch's observations as one PolicyInput on the host, one copy per
// image, in pinned memory when the policy is on a GPU (its copy to the device
// then never blocks the actor).
PolicyInput GatherRequests(const std::vector<ObservationRequest>& batch,
                           const InferenceServerOptions& o) {
  const int64_t B = static_cast<int64_t>(batch.size());
  const int64_t L = o.text.size(1);
  const size_t img = static_cast<size_t>(o.image_height) * o.image_width * 3;
  PolicyInput in;
  const int C = o.cameras;
  in.images = torch::empty({B, C, o.image_height, o.image_width, 3},
                           HostStaging(o.device, torch::kByte));
  uint8_t* images = in.images.data_ptr<uint8_t>();
  in.proprio =
      torch::empty({B, o.proprio_dim}, HostStaging(o.device, torch::kFloat));
  in.text = torch::empty({B, L}, HostStaging(o.device, torch::kLong));
  in.text_len = torch::empty({B}, HostStaging(o.device, torch::kLong));
  const int64_t* text = o.text.data_ptr<int64_t>();
  const int64_t* text_len = o.text_len.data_ptr<int64_t>();
  for (int64_t b = 0; b < B; ++b) {
    const ObservationRequest& r = batch[static_cast<size_t>(b)];
    for (int c = 0; c < C; ++c) {
      std::memcpy(images + (b * C + c) * img, r.images[c], img);
    }
    std::memcpy(in.proprio.data_ptr<float>() + b * o.proprio_dim, r.proprio,
                sizeof(float) * o.proprio_dim);
    std::memcpy(in.text.data_ptr<int64_t>() + b * L, text + r.task * L,
                sizeof(int64_t) * L);
    in.text_len.data_ptr<int64_t>()[b] = text_len[r.task];
  }
  return in;
}

}  // namespace

InferenceServer::InferenceServer(const InferenceServerOptions& options,
                                 ObservationSource* source,
                                 WeightChannel<Policy>* weights,
                                 MetricsRegistry* metrics,
                                 StageTimeline* timeline)
    : options_(options),
      source_(source),
      weights_(weights),
      timeline_(timeline) {
  MetricsRegistry& r = *metrics;
  batch_size_ = &r.histogram(
      "inference_batch_size",
      std::vector<double>{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024});
  auto ms = [] { return Histogram::Exponential(0.01, 1.6, 32); };
  request_dwell_ms_ = &r.histogram("time_request_queue_dwell_ms", +ms);
  inference_ms_ = &r.histogram("time_inference_ms", +ms);
  stage_ = &r.stage("stage_inference");
}

// threads_ (the last member) stops and joins the actors first if Wait was
// not called.
InferenceServer::~InferenceServer() = default;

void InferenceServer::Start(std::function<void()> on_stop) {
  Supervisor& supervisor = threads_.Start(std::move(on_stop));
  const int actors = options_.full_batch ? 1 : options_.actors;
  for (int a = 0; a < actors; ++a) {
    supervisor.Spawn(absl::StrCat("inference-actor-", a), [this] {
      return TorchBoundary("inference actor", [this] { return ActorLoop(); });
    });
  }
}

struct InferenceServer::ActorState {
  std::shared_ptr<Policy> policy;
  uint64_t version = ~0ull;
  std::unique_ptr<ServingWeights> serving;  // with options.bf16
  std::vector<ActionReply> replies;
};

absl::Status InferenceServer::Infer(
    const std::vector<ObservationRequest>& batch, ActorState& actor) {
  const int64_t t0 = SteadyNowNs();
  if (weights_->version() != actor.version || actor.policy == nullptr) {
    WeightChannel<Policy>::Entry e = weights_->Latest();
    actor.policy =
        actor.serving != nullptr ? actor.serving->Refresh(e.value) : e.value;
    actor.version = e.version;
  }
  const std::shared_ptr<Policy>& policy = actor.policy;
  std::vector<ActionReply>& replies = actor.replies;
  for (const ObservationRequest& r : batch)
    request_dwell_ms_->Observe((t0 - r.submit_ns) / 1e6);
  // No autograd state at all (NoGradGuard still tracks versions and views):
  // every output ends in the one host copy below.
  c10::InferenceMode inference_mode;
  const PolicyInput in =
      ToDevice(GatherRequests(batch, options_), options_.device);
  ActResult a;
  {
    AutocastGuard autocast(options_.device, options_.bf16);
    a = policy->Act(in, /*greedy=*/false);
  }
  // Everything the replies carry comes back in one device-to-host copy (the
  // batch's one host sync on a GPU): per row, K*A actions, K*A taken (bins
  // are exact in float; a Gaussian sample is one), K log-probs and the value.
  const int64_t B = static_cast<int64_t>(batch.size());
  const int64_t k = options_.chunk;
  const int64_t ka = k * options_.action_dim, row = 2 * ka + k + 1;
  const at::Tensor packed =
      torch::cat({a.actions.reshape({B, ka}).to(torch::kFloat),
                  a.tokens.reshape({B, ka}).to(torch::kFloat),
                  a.log_probs.reshape({B, k}).to(torch::kFloat),
                  a.values.reshape({B, 1}).to(torch::kFloat)},
                 1)
          .to(torch::kCPU)
          .contiguous();
  // One byte per bin index, or the float32 taken as they are.
  const at::Tensor tokens = options_.taken_bytes == 1
                                ? packed.narrow(1, ka, ka).to(torch::kByte)
                                : packed.narrow(1, ka, ka).contiguous();
  const uint8_t* taken = static_cast<const uint8_t*>(tokens.data_ptr());
  const int64_t taken_row = ka * options_.taken_bytes;
  const float* host = packed.data_ptr<float>();
  replies.resize(batch.size());
  for (size_t b = 0; b < batch.size(); ++b) {
    const int64_t i = static_cast<int64_t>(b);
    const float* r = host + i * row;
    replies[b] = {batch[b].env,          a.version,  r,
                  taken + i * taken_row, r + 2 * ka, r[2 * ka + k]};
  }
  const int64_t t1 = SteadyNowNs();
  inference_ms_->Observe((t1 - t0) / 1e6);
  batch_size_->Observe(static_cast<double>(batch.size()));
  timeline_->Record(StageInterval::kInference, t0, t1);
  stage_->AddBusy(std::chrono::nanoseconds(t1 - t0));
  return source_->Reply(replies);
}

HistogramSnapshot InferenceServer::batch_sizes() const {
  return batch_size_->Snapshot();
}

absl::Status InferenceServer::ActorLoop() {
  ActorState actor;
  if (options_.bf16)
    actor.serving = std::make_unique<ServingWeights>(at::kBFloat16);
  std::vector<ObservationRequest> batch;
  BoundedQueue<ObservationRequest>& requests = source_->requests();
  auto fail = [this](absl::Status s) {
    return threads_.stopping() ? absl::OkStatus() : s;
  };
  if (!options_.full_batch) {
    DynamicBatcher<ObservationRequest> batcher(&requests, options_.batcher);
    for (;;) {
      const int64_t w0 = SteadyNowNs();
      const QueueStatus s = batcher.NextBatch(batch);
      stage_->AddIdle(std::chrono::nanoseconds(SteadyNowNs() - w0));
      if (s == QueueStatus::kClosed) return absl::OkStatus();
      if (batch.empty()) continue;
      if (absl::Status st = Infer(batch, actor); !st.ok()) return fail(st);
    }
  }
  // Barrier: one batch of every env that is not parked (one actor).
  std::vector<ObservationRequest> buf(std::max<size_t>(1, requests.capacity()));
  for (;;) {
    size_t n = 0;
    const int64_t w0 = SteadyNowNs();
    const size_t room =
        buf.size() > batch.size() ? buf.size() - batch.size() : 1;
    const QueueStatus s =
        requests.PopBulk(buf.data(), room, absl::Milliseconds(20), &n);
    stage_->AddIdle(std::chrono::nanoseconds(SteadyNowNs() - w0));
    if (s == QueueStatus::kClosed) return absl::OkStatus();
    batch.insert(batch.end(), buf.begin(), buf.begin() + n);
    if (batch.empty() ||
        static_cast<int>(batch.size()) < options_.full_batch()) {
      continue;
    }
    if (absl::Status st = Infer(batch, actor); !st.ok()) return fail(st);
    batch.clear();
  }
}

}  // namespace rlvla3
