// Learner scaling over c10d Gloo ranks on this machine: samples/s and step
// time of the data-parallel learner at 1, 2, ... ranks (separate processes on
// loopback), TinyVLA at its default size on 64x64 observations, PPO, one
// intra-op thread per rank. Each rank trains the same per-rank batch (weak
// scaling: the global batch grows with the ranks), so scaling efficiency =
// samples/s at W ranks / (W x samples/s at 1 rank); step time at W ranks vs
// 1 says what the all-reduce and the parameter gather cost.
//
//   learner_scaling [--ranks 1,2] [--steps 8] [--per-rank-batch 128]
//                   [--overlap 0|1]   (all-reduce during the last backward)
//
// Prints a table and a JSON line. It starts itself once per rank (ChildProcess,
// with
// --rank-of WORLD and RANK, MASTER_ADDR, MASTER_PORT, WORLD_SIZE set).
#include <torch/torch.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "policies/tiny_vla_policy.h"
#include "services/learner/c10d_reducer.h"
#include "services/learner/learner_core.h"
#include "services/runs/child_process.h"

namespace rlvla3 {
namespace {

constexpr int kDecisions = 16;

struct Flags {
  std::vector<int> ranks = {1, 2};
  int steps = 8;
  int per_rank_batch = 128;  // samples per rank per optimizer step
  bool is_rank = false;
  bool overlap = true;  // all-reduce overlapped with the last backward
};

SegmentShape Shape(const TinyVLAOptions& o) {
  SegmentShape s;
  s.width = s.height = 64;
  s.chunk = static_cast<int>(o.chunk());
  s.action_dim = static_cast<int>(o.action_dim());
  s.proprio_dim = static_cast<int>(o.proprio_dim());
  s.capacity = kDecisions;
  return s;
}

// Plausible rollout data: random pixels, tokens and rewards.
void Fill(RolloutSegment* s, uint64_t version, std::mt19937* rng) {
  s->Clear();
  for (auto& b : s->images) b = static_cast<uint8_t>((*rng)());
  for (auto& p : s->proprio) p = static_cast<float>((*rng)() % 100) / 100.0f;
  for (auto& t : s->tokens) t = static_cast<uint8_t>((*rng)());
  for (auto& l : s->log_probs) l = -5.5f;
  for (int t = 0; t < kDecisions; ++t) {
    s->values[t] = 0.1f * static_cast<float>((*rng)() % 10);
    s->rewards[t] = static_cast<float>((*rng)() % 2);
    s->executed[t] = static_cast<uint8_t>(s->shape.chunk);
    s->versions[t] = version;
  }
  s->n = kDecisions;
  s->has_bootstrap = true;
}

// One rank: warm-up step, then --steps timed steps; rank 0 prints
// "RESULT step_s samples_per_s".
int RunRank(const Flags& f) {
  torch::set_num_threads(1);
  absl::StatusOr<std::unique_ptr<GradientReducer>> reducer =
      JoinProcessGroupFromEnvironment("gloo", absl::Seconds(120),
                                      /*alone_is_local=*/false);
  if (!reducer.ok()) {
    std::fprintf(stderr, "%s\n", reducer.status().ToString().c_str());
    return 1;
  }
  torch::manual_seed(0);
  TinyVLAOptions to;
  auto policy = std::make_shared<TinyVLAPolicy>(TinyVLA(to), 0);
  LearnerOptions lo;
  lo.micro_batch = 32;
  lo.global_units = f.per_rank_batch;
  lo.max_policy_lag = 1;
  lo.normalize_advantages = false;
  lo.overlap_allreduce = f.overlap;
  lo.ppo_epochs = lo.minibatches = 1;  // one streaming pass per step
  LearnerCore core(policy, torch::ones({1, to.max_text_len()}, torch::kLong),
                   torch::full({1}, 4, torch::kLong), lo, 0, reducer->get());
  if (!core.SyncParameters().ok()) return 1;
  const int per_step = f.per_rank_batch / kDecisions;
  std::vector<std::unique_ptr<RolloutSegment>> segs;
  for (int i = 0; i < per_step; ++i)
    segs.push_back(std::make_unique<RolloutSegment>(Shape(to)));
  std::mt19937 rng(static_cast<uint32_t>((*reducer)->rank()));
  std::chrono::steady_clock::time_point t0;
  for (int step = 0; step <= f.steps; ++step) {
    if (step == 1) t0 = std::chrono::steady_clock::now();  // after warm-up
    std::vector<RolloutSegment*> mine;
    for (auto& s : segs) {
      Fill(s.get(), core.version(), &rng);
      mine.push_back(s.get());
    }
    core.Add(mine);
    while (core.CanTrain()) core.TrainMicroBatch();
    core.Step();
    if (!core.group_status().ok()) {
      std::fprintf(stderr, "%s\n", core.group_status().ToString().c_str());
      return 1;
    }
    core.TakeConsumed();
  }
  const double s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count() /
      f.steps;
  if ((*reducer)->rank() == 0) {
    std::printf("RESULT %.6f %.3f\n", s,
                f.per_rank_batch * (*reducer)->world_size() / s);
  }
  return 0;
}

// Starts `world` ranks of this program and reads rank 0's result.
bool RunWorld(const Flags& f, int world, int port, double* step_s,
              double* sps) {
  const std::string log_dir = std::filesystem::temp_directory_path() /
                              ("learner_scaling_" + std::to_string(getpid()));
  std::error_code ec;
  std::filesystem::create_directories(log_dir, ec);
  std::vector<std::unique_ptr<ChildProcess>> ranks;
  for (int r = 0; r < world; ++r) {
    ranks.push_back(std::make_unique<ChildProcess>(
        std::vector<std::string>{"/proc/self/exe", "--rank-of",
                                 std::to_string(world), "--steps",
                                 std::to_string(f.steps), "--per-rank-batch",
                                 std::to_string(f.per_rank_batch), "--overlap",
                                 f.overlap ? "1" : "0"},
        log_dir + "/rank" + std::to_string(r) + ".log",
        std::vector<std::string>{"MASTER_ADDR=127.0.0.1",
                                 "MASTER_PORT=" + std::to_string(port),
                                 "RANK=" + std::to_string(r),
                                 "WORLD_SIZE=" + std::to_string(world)}));
    if (absl::Status s = ranks.back()->Start(); !s.ok()) {
      std::fprintf(stderr, "%s\n", s.ToString().c_str());
      return false;  // the started ranks are stopped with their handles
    }
  }
  bool ok = true;
  for (auto& r : ranks) {
    while (!r->Poll())
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (r->exit_code() != 0) {
      std::fprintf(stderr, "%s: %s\n", r->log_path().c_str(),
                   r->HowItEnded().c_str());
      ok = false;
    }
  }
  std::ifstream in(ranks[0]->log_path());
  std::string line;
  bool found = false;
  while (ok && !found && std::getline(in, line)) {
    found = std::sscanf(line.c_str(), "RESULT %lf %lf", step_s, sps) == 2;
  }
  std::filesystem::remove_all(log_dir, ec);
  return ok && found;
}

bool Parse(int argc, char** argv, Flags* f) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--ranks") {
      f->ranks.clear();
      for (absl::string_view x : absl::StrSplit(v, ',')) {
        int n = 0;
        if (!absl::SimpleAtoi(x, &n) || n < 1) return false;
        f->ranks.push_back(n);
      }
    } else if (k == "--steps") {
      if (!absl::SimpleAtoi(v, &f->steps) || f->steps < 1) return false;
    } else if (k == "--per-rank-batch") {
      if (!absl::SimpleAtoi(v, &f->per_rank_batch) ||
          f->per_rank_batch < kDecisions || f->per_rank_batch % kDecisions)
        return false;
    } else if (k == "--overlap") {
      if (v != "0" && v != "1") return false;
      f->overlap = v == "1";
    } else if (k == "--rank-of") {
      f->is_rank = true;
    } else {
      return false;
    }
  }
  return true;
}

int Main(int argc, char** argv) {
  Flags f;
  if (!Parse(argc, argv, &f)) {
    std::fprintf(stderr,
                 "usage: learner_scaling [--ranks 1,2] [--steps N] "
                 "[--per-rank-batch B (a multiple of %d)] [--overlap 0|1]\n",
                 kDecisions);
    return 2;
  }
  if (f.is_rank) return RunRank(f);
  std::printf(
      "learner scaling: TinyVLA (default size), 64x64, PPO, %d "
      "samples per rank per step, c10d Gloo on loopback, 1 intra-op "
      "thread per rank, all-reduce overlapped with backward: %s, %ld "
      "cores\n",
      f.per_rank_batch, f.overlap ? "yes" : "no",
      sysconf(_SC_NPROCESSORS_ONLN));
  std::printf("%6s %12s %12s %12s\n", "ranks", "step s", "samples/s",
              "efficiency");
  double base = 0;
  std::string json = "{\"per_rank_batch\":" + std::to_string(f.per_rank_batch);
  const int port = 29000 + static_cast<int>(getpid() % 1000);
  for (size_t i = 0; i < f.ranks.size(); ++i) {
    double step_s = 0, sps = 0;
    if (!RunWorld(f, f.ranks[i], port + static_cast<int>(i), &step_s, &sps)) {
      std::fprintf(stderr, "learner_scaling: %d ranks failed\n", f.ranks[i]);
      return 1;
    }
    if (f.ranks[i] == 1) base = sps;
    const double eff = base > 0 ? sps / (f.ranks[i] * base) : 0;
    std::printf("%6d %12.3f %12.1f %12.2f\n", f.ranks[i], step_s, sps, eff);
    json += ",\"ranks_" + std::to_string(f.ranks[i]) +
            "\":{\"step_s\":" + std::to_string(step_s) +
            ",\"samples_per_s\":" + std::to_string(sps) +
            ",\"efficiency\":" + std::to_string(eff) + "}";
  }
  std::printf("%s}\n", json.c_str());
  return 0;
}

}  // namespace
}  // namespace rlvla3

int main(int argc, char** argv) { return rlvla3::Main(argc, argv); }
