// The memory model of `rl-vla3 plan` (services/plan/memory_model.h) against
// what LibTorch allocates on this machine's CPU, at the TinyVLA sizes
// docs/gpu.md documents (d128 / d512 / d768): the weights, the gradients
// the first backward allocates, AdamW's state its first step allocates, and
// the activations one micro-batch keeps for backward (the heap in use after
// forward, the graph alive, less before), each predicted and measured, with
// the error. The heap is read from tcmalloc (the project's allocator) or
// glibc's mallinfo2. A plain executable: it prints a table and asserts
// nothing.
//
//   memory_figures [--sizes 1,25,100] [--batches 8,16] [--json F]
#include <dlfcn.h>
#include <malloc.h>
#include <torch/torch.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "bench/bench_flags.h"
#include "bench/staged_batch.h"
#include "policies/tiny_vla_policy.h"
#include "services/options/plan_options.h"
#include "services/plan/memory_model.h"

namespace rlvla3 {
namespace {

// Bytes the heap holds for the program now.
double HeapInUse() {
  using Property = int (*)(const char*, size_t*);
  static const auto tcmalloc = reinterpret_cast<Property>(
      dlsym(RTLD_DEFAULT, "MallocExtension_GetNumericProperty"));
  if (tcmalloc != nullptr) {
    size_t v = 0;
    if (tcmalloc("generic.current_allocated_bytes", &v)) return double(v);
  }
  const struct mallinfo2 m = mallinfo2();
  return double(m.uordblks + m.hblkhd);
}

struct Row {
  std::string size, part;
  int batch = 0;
  double predicted = 0, measured = 0;
};

void Measure(int millions, int batch, std::vector<Row>* rows) {
  torch::manual_seed(0);
  const TinyVLAOptions o = DocumentedSize(millions);
  const double before_weights = HeapInUse();
  TinyVLAPolicy policy(TinyVLA(o), 0);
  const double weights = HeapInUse() - before_weights;
  int64_t P = 0;
  for (const at::Tensor& t : policy.net()->parameters()) P += t.numel();
  PolicyShape shape = PolicyShapeOf(o);
  shape.parameters = P;
  shape.image_height = shape.image_width = kBenchImage;
  LearnerMemoryOptions lo;
  lo.micro_batch = batch;
  const MemoryEstimate m = LearnerMemory(shape, lo);
  const std::string name =
      absl::StrFormat("d%d x %d (%.1f M)", o.d_model(), o.layers(), P / 1e6);
  StagedBatch input(batch, at::Device(at::kCPU));
  const at::Tensor tokens =
      torch::randint(0, 256, {batch, policy.chunk(), 7}, torch::kLong);
  torch::optim::AdamW opt(policy.net()->parameters(),
                          torch::optim::AdamWOptions(1e-5));
  const PolicyInput in = input.OnDevice(at::Device(at::kCPU));
  const double a0 = HeapInUse();
  double activations = 0, gradients = 0;
  {
    EvalResult e = policy.Evaluate(in, tokens);
    at::Tensor loss = -e.log_probs.mean() + e.values.pow(2).mean();
    activations = HeapInUse() - a0;
    loss.backward();
  }
  gradients = HeapInUse() - a0;
  const double a2 = HeapInUse();
  opt.step();
  const double adamw = HeapInUse() - a2;
  rows->push_back({name, "weights", batch, m.Of("weights"), weights});
  rows->push_back({name, "gradients", batch, m.Of("gradients"), gradients});
  rows->push_back({name, "adamw", batch, m.Of("adamw"), adamw});
  rows->push_back(
      {name, "activations", batch, m.Of("activations"), activations});
}

int Main(int argc, char** argv) {
  std::vector<int> sizes = {1, 25, 100}, batches = {8, 16};
  std::string json;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    bool ok = true;
    if (k == "--sizes") {
      ok = ParseIntList(v, &sizes);
    } else if (k == "--batches") {
      ok = ParseIntList(v, &batches);
    } else if (k == "--json") {
      json = v;
    } else {
      ok = false;
    }
    if (!ok) {
      std::fprintf(stderr, "memory_figures: bad flag %s %s\n", k.c_str(),
                   v.c_str());
      return 2;
    }
  }
  torch::set_num_threads(1);
  std::vector<Row> rows;
  for (int s : sizes)
    for (int b : batches) Measure(s, b, &rows);
  std::printf("%-22s %-12s %6s %12s %12s %8s\n", "policy", "part", "batch",
              "predicted MB", "measured MB", "error");
  std::string lines;
  for (const Row& r : rows) {
    const double err = r.measured > 0 ? r.predicted / r.measured - 1 : 0;
    std::printf("%-22s %-12s %6d %12.2f %12.2f %+7.1f%%\n", r.size.c_str(),
                r.part.c_str(), r.batch, r.predicted / 1e6, r.measured / 1e6,
                100 * err);
    lines += absl::StrFormat(
        "{\"policy\": \"%s\", \"part\": \"%s\", \"batch\": %d, "
        "\"predicted_bytes\": %.0f, \"measured_bytes\": %.0f}\n",
        r.size, r.part, r.batch, r.predicted, r.measured);
  }
  if (!json.empty()) {
    std::ofstream out(json);
    out << lines;
    out.flush();
    if (!out) {
      std::fprintf(stderr, "memory_figures: cannot write %s\n", json.c_str());
      return 1;
    }
  }
  return 0;
}

}  // namespace
}  // namespace rlvla3

int main(int argc, char** argv) { return rlvla3::Main(argc, argv); }
