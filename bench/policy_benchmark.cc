// TinyVLA benchmarks: inference observations/s at batch 1, 8, 32, 128 (two
// 128x128 cameras), learner samples/s (forward + backward + AdamW step),
// and packed vs padded learner throughput at the suite's real padding ratio
// and at a 50% padding ratio.
//
//   build/bench/policy_benchmark --benchmark_counters_tabular=true
//
// Threads: LibTorch intra-op threads = the benchmark's --threads argument
// (default 2, this machine's cores), set once.
#include <benchmark/benchmark.h>
#include <torch/torch.h>

#include "envs/task.h"
#include "policies/text_tokenizer.h"
#include "policies/tiny_vla_policy.h"

namespace rlvla3 {
namespace {

constexpr int kImage = 128;
constexpr int kLearnerBatch = 64;

struct Setup {
  TextTokenizer tok;
  std::vector<std::vector<int64_t>>
      instructions;  // suite instructions, tokenized
  Setup() {
    std::vector<std::string> texts;
    for (const auto& t : BuiltinTaskSuite()) texts.push_back(t.instruction);
    tok = TextTokenizer::Build(texts);
    for (const auto& t : texts) instructions.push_back(tok.Encode(t));
  }
};

const Setup& S() {
  static const Setup* s = [] {
    at::set_num_threads(2);
    return new Setup();
  }();
  return *s;
}

// A batch with the suite's instructions, or (padding50) instruction lengths
// spread so that half of all text positions are padding.
PolicyInput Batch(int64_t B, int image, bool padding50, int64_t max_len) {
  PolicyInput in;
  in.images = torch::randint(0, 256, {B, 2, image, image, 3}, torch::kByte);
  in.proprio = torch::randn({B, 8});
  std::vector<int64_t> lens;
  // For 50% padding: a fraction f of the samples has max_len tokens, the rest
  // 1, with f chosen so that real tokens are half of the padded total.
  const int64_t fixed =
      2 * TinyVLAOptions().grid() * TinyVLAOptions().grid() + 2;
  const double mean_len =
      0.5 * static_cast<double>(max_len + fixed) - static_cast<double>(fixed);
  const int64_t n_long = static_cast<int64_t>(
      std::llround(static_cast<double>(B) * (mean_len - 1) /
                   static_cast<double>(max_len - 1)));
  for (int64_t b = 0; b < B; ++b) {
    lens.push_back(
        padding50 ? (b < n_long ? max_len : 1)
                  : static_cast<int64_t>(
                        S().instructions[b % S().instructions.size()].size()));
  }
  const int64_t L = *std::max_element(lens.begin(), lens.end());
  in.text = torch::randint(2, S().tok.size(), {B, L}, torch::kLong);
  for (int64_t b = 0; b < B; ++b)
    in.text[b].narrow(0, lens[b], L - lens[b]).zero_();
  in.text_len = torch::tensor(lens, torch::kLong);
  return in;
}

double PaddingRatio(const PolicyInput& in, int64_t image_tokens) {
  const double real = in.text_len.sum().item<double>() +
                      in.text_len.size(0) * (image_tokens + 2);
  const double padded = static_cast<double>(in.text_len.size(0)) *
                        (in.text.size(1) + image_tokens + 2);
  return 1.0 - real / padded;
}

void BM_Inference(benchmark::State& state) {
  const int64_t B = state.range(0);
  TinyVLAPolicy policy(TinyVLA(TinyVLAOptions().vocab_size(S().tok.size())), 0);
  policy.net()->eval();
  PolicyInput in = Batch(B, kImage, false, 16);
  for (auto _ : state) benchmark::DoNotOptimize(policy.Act(in, false).tokens);
  state.counters["obs_per_s"] = benchmark::Counter(
      static_cast<double>(state.iterations() * B), benchmark::Counter::kIsRate);
}

// Learner step: Evaluate + loss + backward + AdamW, packed or padded.
void BM_Learner(benchmark::State& state) {
  const bool packed = state.range(0) != 0;
  const bool padding50 = state.range(1) != 0;
  // Long instructions make the 50% case: text dominates the sequence.
  const int64_t max_len = padding50 ? 256 : 16;
  TinyVLAOptions o =
      TinyVLAOptions().vocab_size(S().tok.size()).max_text_len(max_len);
  TinyVLAPolicy policy(TinyVLA(o), 0, packed);
  torch::optim::AdamW opt(policy.net()->parameters(),
                          torch::optim::AdamWOptions(3e-4));
  PolicyInput in =
      Batch(kLearnerBatch, padding50 ? 32 : kImage, padding50, max_len);
  at::Tensor tokens =
      torch::randint(0, 256, {kLearnerBatch, o.chunk(), 7}, torch::kLong);
  for (auto _ : state) {
    EvalResult e = policy.Evaluate(in, tokens);
    at::Tensor loss = -e.log_probs.mean() + e.values.pow(2).mean();
    opt.zero_grad();
    loss.backward();
    opt.step();
  }
  state.counters["samples_per_s"] = benchmark::Counter(
      static_cast<double>(state.iterations() * kLearnerBatch),
      benchmark::Counter::kIsRate);
  state.counters["padding_ratio"] = PaddingRatio(in, 2 * o.grid() * o.grid());
}

BENCHMARK(BM_Inference)
    ->ArgName("batch")
    ->Arg(1)
    ->Arg(8)
    ->Arg(32)
    ->Arg(128)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_Learner)
    ->ArgNames({"packed", "pad50"})
    ->Args({0, 0})
    ->Args({1, 0})
    ->Args({0, 1})
    ->Args({1, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace rlvla3
