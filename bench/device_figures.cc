// TinyVLA on each device, at the sizes docs/gpu.md documents: inference
// observations/s per batch size as an inference actor sees them (the batch
// copied into pinned host memory, one copy to the device, Act, the replies
// back in one copy) and learner samples/s (micro-batch staged the same way,
// Evaluate + loss + backward + AdamW step, one host read of the loss).
// bf16 autocast on a GPU, fp32 on the CPU (as the plain-PyTorch anchor in
// docs/experiments.md). A plain executable: it prints a table and, with
// --json, one JSON object per row.
//
//   device_figures [--devices cpu,cuda] [--sizes 1,25,100] [--batches 8,64,256]
//                  [--learner-batch 64] [--seconds 3] [--threads 16] [--json F]
//
// A device this machine lacks is reported and skipped.
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "bench/bench_flags.h"
#include "bench/staged_batch.h"
#include "policies/device.h"
#include "policies/host_sync_counter.h"
#include "policies/tiny_vla_policy.h"

namespace rlvla3 {
namespace {

constexpr int kImage = kBenchImage, kText = kBenchText;

struct Flags {
  std::vector<std::string> devices = {"cpu", "cuda"};
  std::vector<int> sizes = {1, 100};  // millions of parameters, about
  std::vector<int> batches = {8, 64, 256};
  int learner_batch = 64;
  double seconds = 3;
  int threads = 0;  // 0: LibTorch's default
  std::string json;
};

std::string Syncs(const Measured& m) {
  return m.syncs_per_call < 0 ? "-" : absl::StrFormat("%.2f", m.syncs_per_call);
}

Measured Inference(TinyVLAPolicy& policy, const at::Device& device, int64_t B,
                   double seconds) {
  StagedBatch batch(B, device);
  const bool bf16 = device.is_cuda();
  return Measure(seconds, B, [&] {
    AutocastGuard autocast(device, bf16);
    const ActResult a = policy.Act(batch.OnDevice(device), false);
    const at::Tensor host = torch::cat({a.tokens.flatten(1).to(torch::kFloat),
                                        a.log_probs, a.values.unsqueeze(1)},
                                       1)
                                .to(torch::kCPU);  // the batch's one host sync
    (void)host;
  });
}

Measured Learner(TinyVLAPolicy& policy, const at::Device& device, int64_t B,
                 double seconds) {
  StagedBatch batch(B, device);
  const bool bf16 = device.is_cuda();
  torch::optim::AdamW opt(policy.net()->parameters(),
                          torch::optim::AdamWOptions(1e-5));
  const at::Tensor tokens =
      torch::randint(0, 256, {B, policy.chunk(), 7}, torch::kLong)
          .to(device);  // once
  return Measure(seconds, B, [&] {
    EvalResult e;
    {
      AutocastGuard autocast(device, bf16);
      e = policy.Evaluate(batch.OnDevice(device), tokens);
    }
    const at::Tensor loss = -e.log_probs.to(torch::kFloat).mean() +
                            e.values.to(torch::kFloat).pow(2).mean();
    opt.zero_grad();
    loss.backward();
    opt.step();
    (void)loss.item<double>();  // the step's host read
  });
}

bool ParseFlags(int argc, char** argv, Flags* f) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    bool ok = true;
    if (k == "--devices") {
      f->devices = absl::StrSplit(v, ',');
    } else if (k == "--sizes") {
      ok = ParseIntList(v, &f->sizes);
    } else if (k == "--batches") {
      ok = ParseIntList(v, &f->batches);
    } else if (k == "--learner-batch") {
      ok = absl::SimpleAtoi(v, &f->learner_batch) && f->learner_batch > 0;
    } else if (k == "--seconds") {
      ok = absl::SimpleAtod(v, &f->seconds) && f->seconds > 0;
    } else if (k == "--threads") {
      ok = absl::SimpleAtoi(v, &f->threads) && f->threads >= 0;
    } else if (k == "--json") {
      f->json = v;
    } else {
      ok = false;
    }
    if (!ok) {
      std::fprintf(stderr, "device_figures: bad flag %s %s\n", k.c_str(),
                   v.c_str());
      return false;
    }
  }
  return argc % 2 == 1;
}

int Main(int argc, char** argv) {
  Flags f;
  if (!ParseFlags(argc, argv, &f)) {
    std::fprintf(
        stderr,
        "usage: device_figures [--devices cpu,cuda] [--sizes 1,25,100] "
        "[--batches 8,64,256] [--learner-batch 64] [--seconds 3] "
        "[--threads N] [--json FILE]\n");
    return 2;
  }
  if (f.threads > 0) at::set_num_threads(f.threads);  // once, here
  std::ofstream json;
  if (!f.json.empty()) json.open(f.json);
  std::printf(
      "device_figures: %s, %d intra-op threads, %dx%d images, %d text tokens\n",
      DescribeGpus().c_str(), at::get_num_threads(), kImage, kImage, kText);
  std::printf("%-8s %8s %6s %6s %14s %12s %18s %11s\n", "device", "params",
              "prec", "batch", "inference/s", "syncs/batch",
              "learner samples/s", "syncs/step");
  for (const std::string& name : f.devices) {
    absl::StatusOr<at::Device> device = ParseDevice(name);
    if (!device.ok()) {
      std::printf("%-8s skipped: %s\n", name.c_str(),
                  std::string(device.status().message()).c_str());
      continue;
    }
    for (int size : f.sizes) {
      torch::manual_seed(0);
      TinyVLAPolicy policy(TinyVLA(DocumentedSize(size)), 0);
      policy.To(*device);
      int64_t params = 0;
      for (const at::Tensor& p : policy.net()->parameters())
        params += p.numel();
      const char* precision = device->is_cuda() ? "bf16" : "fp32";
      for (int B : f.batches) {
        policy.SetTraining(false);
        const Measured inf = Inference(policy, *device, B, f.seconds);
        Measured learn;
        if (B == f.learner_batch) {
          policy.SetTraining(true);
          learn = Learner(policy, *device, B, f.seconds);
        }
        const bool learned = learn.per_second > 0;
        std::printf(
            "%-8s %7.2fM %6s %6d %14.1f %12s %18s %11s\n", name.c_str(),
            params / 1e6, precision, B, inf.per_second, Syncs(inf).c_str(),
            learned ? absl::StrFormat("%.1f", learn.per_second).c_str() : "-",
            learned ? Syncs(learn).c_str() : "-");
        std::fflush(stdout);
        if (json.is_open()) {
          json << absl::StrFormat(
              "{\"device\": \"%s\", \"gpus\": \"%s\", \"params\": %d, "
              "\"precision\": \"%s\", \"batch\": %d, \"inference_obs_per_s\": "
              "%.3f, \"inference_syncs_per_batch\": %.3f, "
              "\"learner_samples_per_s\": %.3f, "
              "\"learner_syncs_per_step\": %.3f}\n",
              name, DescribeGpus(), params, precision, B, inf.per_second,
              inf.syncs_per_call, learn.per_second, learn.syncs_per_call);
        }
      }
    }
  }
  if (json.is_open() && !json) {
    std::fprintf(stderr, "device_figures: cannot write %s\n", f.json.c_str());
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace rlvla3

int main(int argc, char** argv) { return rlvla3::Main(argc, argv); }
