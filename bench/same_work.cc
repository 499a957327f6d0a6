// The C++ side of the same-work comparison with the plain-PyTorch anchor
// (bench/anchor/tiny_vla_anchor.py; bench/anchor/compare.py runs both):
//
//   same_work save DIR [--d-model 128] [--heads 4] [--layers 2]
//       a TinyVLA checkpoint (seed 0, 16 instruction tokens) both sides load
//   same_work dump CHECKPOINT FILE
//       fixed inputs of 8 observations with instructions of 3..16 tokens and
//       the policy's padded and packed outputs, as safetensors, for the
//       anchor's `check`
//   same_work time CHECKPOINT [--device cpu] [--batches 8,64]
//       [--learner-batch 64] [--seconds 3] [--threads N] [--json FILE]
//       [--epochs E --minibatches M]   (the multi-pass learner: its host
//                                       syncs per optimizer step)
//
// Inference: the actor's path (a frozen snapshot, served in bf16 on a GPU; a
// pageable batch copied into pinned staging on a GPU, one copy to the device,
// Act sampling under inference mode, the tokens, log-probs and values back in
// one host copy). Learner: the real LearnerCore
// (segments in, GAE, gather and staging, the packed forward, the PPO loss,
// clipping, AdamW, one host read per step), micro-batch = global batch.
// bf16 autocast on a GPU, fp32 on a CPU, as the anchor.
#include <c10/core/InferenceMode.h>
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "bench/bench_flags.h"
#include "bench/staged_batch.h"
#include "policies/checkpoint.h"
#include "policies/device.h"
#include "policies/host_sync_counter.h"
#include "policies/safetensors.h"
#include "policies/serving_weights.h"
#include "policies/tiny_vla_policy.h"
#include "services/learner/learner_core.h"

namespace rlvla3 {
namespace {

constexpr int kImage = kBenchImage, kText = kBenchText, kDecisions = 16;

struct Flags {
  std::string device = "cpu";
  std::vector<int> batches = {8, 64};
  int learner_batch = 64;
  double seconds = 3;
  int threads = 0;
  int d_model = 128, heads = 4, layers = 2;
  // The learner's multi-pass update (ppo_epochs x minibatches optimizer
  // steps per global batch); 1 x 1: the streaming single pass.
  int epochs = 1, minibatches = 1;
  std::string json;
};

// As an inference actor: a frozen snapshot, in bf16 on a GPU (the actor's
// serving copy, policies/serving_weights.h).
Measured Inference(TinyVLAPolicy& trained, const at::Device& device, int64_t B,
                   double seconds) {
  StagedBatch batch(B, device);
  ServingWeights serving(at::kBFloat16);
  const std::shared_ptr<Policy> served =
      device.is_cuda() ? serving.Refresh(trained.Snapshot(0))
                       : std::shared_ptr<Policy>(trained.Snapshot(0));
  Policy& policy = *served;
  return Measure(seconds, B, [&] {
    c10::InferenceMode inference_mode;  // as the inference server
    AutocastGuard autocast(device, device.is_cuda());
    const ActResult a = policy.Act(batch.OnDevice(device), false);
    const at::Tensor host = torch::cat({a.tokens.flatten(1).to(torch::kFloat),
                                        a.log_probs, a.values.unsqueeze(1)},
                                       1)
                                .to(torch::kCPU);  // the batch's one host copy
    (void)host;
  });
}

// Rollout segments of random observations and plausible tokens and rewards,
// filled once; each step only re-tags them with the learner's version.
std::vector<std::unique_ptr<RolloutSegment>> MakeSegments(
    const TinyVLAOptions& o, int count) {
  SegmentShape s;
  s.width = s.height = kImage;
  s.chunk = static_cast<int>(o.chunk());
  s.action_dim = static_cast<int>(o.action_dim());
  s.proprio_dim = static_cast<int>(o.proprio_dim());
  s.capacity = kDecisions;
  std::mt19937 rng(1);
  std::vector<std::unique_ptr<RolloutSegment>> segs;
  for (int i = 0; i < count; ++i) {
    auto seg = std::make_unique<RolloutSegment>(s);
    for (auto& b : seg->images) b = static_cast<uint8_t>(rng());
    for (auto& p : seg->proprio) p = static_cast<float>(rng() % 100) / 100.0f;
    for (auto& t : seg->tokens) t = static_cast<uint8_t>(rng());
    for (auto& l : seg->log_probs) l = -5.5f;
    for (int t = 0; t < kDecisions; ++t) {
      seg->values[t] = 0.1f * static_cast<float>(rng() % 10);
      seg->rewards[t] = static_cast<float>(rng() % 2);
      seg->executed[t] = static_cast<uint8_t>(s.chunk);
    }
    seg->n = kDecisions;
    seg->has_bootstrap = true;
    segs.push_back(std::move(seg));
  }
  return segs;
}

Measured Learner(const std::shared_ptr<TinyVLAPolicy>& policy,
                 const at::Device& device, int B, const Flags& f) {
  const double seconds = f.seconds;
  const TinyVLAOptions& o = policy->net()->options();
  LearnerOptions lo;
  lo.micro_batch = B / f.minibatches;
  lo.global_units = B;
  lo.ppo_epochs = f.epochs;
  lo.minibatches = f.minibatches;
  lo.device = device;
  lo.bf16 = device.is_cuda();
  lo.publish_device = device;
  LearnerCore core(policy, torch::randint(2, 64, {1, kText}, torch::kLong),
                   torch::full({1}, kText, torch::kLong), lo, 0);
  auto segs = MakeSegments(o, (B + kDecisions - 1) / kDecisions);
  return Measure(seconds, B, [&] {
    std::vector<RolloutSegment*> batch;
    for (auto& s : segs) {
      for (int t = 0; t < kDecisions; ++t) s->versions[t] = core.version();
      batch.push_back(s.get());
    }
    core.Add(batch);
    while (core.CanTrain()) core.TrainMicroBatch();
    if (core.ReadyToStep()) (void)core.Step();  // reads loss and norm once
    (void)core.TakeConsumed();
  });
}

int Save(const std::string& dir, const Flags& f) {
  torch::manual_seed(0);
  TinyVLA net(TinyVLAOptions()
                  .vocab_size(64)
                  .max_text_len(kText)
                  .d_model(f.d_model)
                  .heads(f.heads)
                  .layers(f.layers));
  std::vector<std::string> words;
  for (int i = 0; i < 62; ++i) words.push_back(absl::StrFormat("w%02d", i));
  absl::StatusOr<TextTokenizer> tok = TextTokenizer::FromWords(words);
  absl::Status s = tok.ok() ? SaveCheckpoint(dir, net, *tok, 0) : tok.status();
  if (!s.ok()) {
    std::fprintf(stderr, "same_work save: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}

int Dump(TinyVLA net, const std::string& path) {
  constexpr int64_t B = 8;
  torch::manual_seed(3);
  PolicyInput in;
  // The anchor (bench/anchor) reads the two cameras by name.
  const at::Tensor agentview =
      torch::randint(0, 256, {B, kImage, kImage, 3}, torch::kByte);
  const at::Tensor wrist =
      torch::randint(0, 256, {B, kImage, kImage, 3}, torch::kByte);
  in.images = torch::stack({agentview, wrist}, 1);
  in.proprio = torch::randn({B, 8});
  in.text = torch::randint(2, 64, {B, kText}, torch::kLong);
  in.text_len = torch::tensor({3, 16, 7, 16, 11, 5, 16, 9}, torch::kLong);
  torch::NoGradGuard no_grad;
  net->eval();
  const TinyVLAOutput padded = net->forward(in, /*packed=*/false);
  const TinyVLAOutput packed = net->forward(in, /*packed=*/true);
  const absl::Status s =
      WriteSafetensors(path, {{"agentview", agentview},
                              {"packed_logits", packed.logits},
                              {"packed_values", packed.values},
                              {"padded_logits", padded.logits},
                              {"padded_values", padded.values},
                              {"proprio", in.proprio},
                              {"text", in.text},
                              {"text_len", in.text_len},
                              {"wrist", wrist}});
  if (!s.ok()) {
    std::fprintf(stderr, "same_work dump: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}

std::string DeviceName(const at::Device& device) {
  if (device.is_cuda()) return DescribeGpus();
  return absl::StrFormat("CPU (%u cores)", std::thread::hardware_concurrency());
}

void Report(std::FILE* json, const std::string& what, int B, const Measured& m,
            int64_t params, const TinyVLAOptions& o, const at::Device& device) {
  std::printf("c++    %-9s batch %4d: %10.1f /s  syncs/call %s\n", what.c_str(),
              B, m.per_second,
              m.syncs_per_call < 0
                  ? "-"
                  : absl::StrFormat("%.2f", m.syncs_per_call).c_str());
  std::fflush(stdout);
  if (json == nullptr) return;
  std::fprintf(json,
               "{\"side\": \"c++\", \"what\": \"%s\", \"batch\": %d, "
               "\"per_s\": %.3f, \"syncs_per_call\": %.3f, \"torch\": \"%s\", "
               "\"device\": \"%s\", \"params\": %lld, \"d_model\": %lld, "
               "\"layers\": %lld, \"heads\": %lld, \"threads\": %d}\n",
               what.c_str(), B, m.per_second, m.syncs_per_call, TORCH_VERSION,
               DeviceName(device).c_str(), static_cast<long long>(params),
               static_cast<long long>(o.d_model()),
               static_cast<long long>(o.layers()),
               static_cast<long long>(o.heads()), at::get_num_threads());
}

int Time(LoadedCheckpoint ck, const Flags& f) {
  absl::StatusOr<at::Device> device = ParseDevice(f.device);
  if (!device.ok()) {
    std::fprintf(stderr, "same_work: %s\n", device.status().ToString().c_str());
    return 2;
  }
  const TinyVLAOptions o = ck.net->options();
  auto policy = std::make_shared<TinyVLAPolicy>(ck.net, 0);
  policy->To(*device);
  int64_t params = 0;
  for (const at::Tensor& p : policy->net()->parameters()) params += p.numel();
  std::printf("c++: LibTorch %s, %s, %d intra-op threads, %.2fM parameters\n",
              TORCH_VERSION, DeviceName(*device).c_str(), at::get_num_threads(),
              params / 1e6);
  std::FILE* json = f.json.empty() ? nullptr : std::fopen(f.json.c_str(), "w");
  if (!f.json.empty() && json == nullptr) {
    std::fprintf(stderr, "same_work: cannot write %s\n", f.json.c_str());
    return 1;
  }
  for (int B : f.batches) {
    Report(json, "inference", B, Inference(*policy, *device, B, f.seconds),
           params, o, *device);
  }
  if (f.learner_batch > 0) {
    // Per optimizer step: the multi-pass update takes epochs x minibatches.
    Measured m = Learner(policy, *device, f.learner_batch, f);
    const int steps = f.epochs * f.minibatches;
    if (m.syncs_per_call >= 0) m.syncs_per_call /= steps;
    Report(json, steps > 1 ? "learner_epochs" : "learner", f.learner_batch, m,
           params, o, *device);
  }
  if (json != nullptr && std::fclose(json) != 0) {
    std::fprintf(stderr, "same_work: cannot write %s\n", f.json.c_str());
    return 1;
  }
  return 0;
}

bool ParseFlag(const std::string& k, const std::string& v, Flags* f) {
  if (k == "--device") return (f->device = v, true);
  if (k == "--json") return (f->json = v, true);
  if (k == "--batches") return ParseIntList(v, &f->batches);
  if (k == "--seconds")
    return absl::SimpleAtod(v, &f->seconds) && f->seconds > 0;
  int* ints[] = {&f->learner_batch, &f->threads, &f->d_model,    &f->heads,
                 &f->layers,        &f->epochs,  &f->minibatches};
  const char* names[] = {"--learner-batch", "--threads", "--d-model",
                         "--heads",         "--layers",  "--epochs",
                         "--minibatches"};
  for (int i = 0; i < 7; ++i) {
    if (k == names[i]) return absl::SimpleAtoi(v, ints[i]) && *ints[i] >= 0;
  }
  return false;
}

int Main(int argc, char** argv) {
  std::vector<std::string> pos;
  Flags f;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--", 0) != 0) {
      pos.push_back(a);
    } else if (i + 1 >= argc || !ParseFlag(a, argv[++i], &f)) {
      std::fprintf(stderr, "same_work: bad flag %s\n", a.c_str());
      return 2;
    }
  }
  const bool ok = (pos.size() == 2 && (pos[0] == "save" || pos[0] == "time")) ||
                  (pos.size() == 3 && pos[0] == "dump");
  if (!ok) {
    std::fprintf(stderr,
                 "usage: same_work save DIR [--d-model D --heads H --layers "
                 "N] | dump CHECKPOINT FILE | time CHECKPOINT [--device cpu] "
                 "[--batches 8,64] [--learner-batch 64] [--seconds 3] "
                 "[--threads N] [--json FILE]\n");
    return 2;
  }
  if (f.threads > 0) at::set_num_threads(f.threads);  // once, here
  if (pos[0] == "save") return Save(pos[1], f);
  absl::StatusOr<LoadedCheckpoint> ck = LoadCheckpoint(pos[1]);
  if (!ck.ok()) {
    std::fprintf(stderr, "same_work: %s\n", ck.status().ToString().c_str());
    return 2;
  }
  return pos[0] == "dump" ? Dump(ck->net, pos[2]) : Time(*std::move(ck), f);
}

}  // namespace
}  // namespace rlvla3

int main(int argc, char** argv) { return rlvla3::Main(argc, argv); }
