// One rank of a data-parallel learner, for data_parallel_test: trains a small
// TinyVLA on a fixed global batch of synthetic PPO segments (12 segments of 4
// decisions per step, the same on every run), its share being the segments
// i with i % WORLD_SIZE == RANK, over a c10d Gloo group joined through the
// torchrun variables (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE). Writes its
// parameters, flattened float32, to OUT.rankR after --steps steps. Step k's
// data depends only on k (the policy version), so a resumed run sees the same
// batches as one that never stopped.
//
//   dp_rank --steps 3 --out DIR/params [--stall-at-step K]
//           [--save CKPT] [--resume CKPT] [--epochs E]
// --save writes a checkpoint at the end (weights from rank 0, every rank its
// optimizer shard); --resume starts from one, saved at any world size.
// With --stall-at-step, rank 1 prints "stalled" before step K and sleeps
// (for the test to kill it); the others must fail within the timeout.
#include <torch/torch.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "policies/checkpoint.h"
#include "policies/tiny_vla_policy.h"
#include "services/learner/c10d_reducer.h"
#include "services/learner/learner_core.h"
#include "tests/services/learner/small_learner.h"

namespace rlvla3 {
namespace {

constexpr int kSegments = 12, kDecisions = 4;  // SmallShape's capacity

void Fill(RolloutSegment* s, uint64_t version, uint32_t seed) {
  std::mt19937 rng(seed);
  testutil::RandomObservations(s, &rng);
  for (auto& l : s->log_probs) l = -30.0f - static_cast<float>(rng() % 10);
  for (int t = 0; t < kDecisions; ++t) {
    s->values[t] = 0.1f * static_cast<float>(rng() % 10);
    s->rewards[t] = static_cast<float>(rng() % 2);
    s->executed[t] = 2;
    s->versions[t] = version;
  }
  s->n = kDecisions;
  s->has_bootstrap = true;
}

int Fail(const absl::Status& s) {
  std::fprintf(stderr, "%s\n", s.ToString().c_str());
  return 1;
}

struct Args {
  int steps = 3, stall_at = -1, epochs = 1;
  std::string out, save, resume;
};

Args ParseArgs(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--save")) a.save = argv[i + 1];
    if (!std::strcmp(argv[i], "--epochs")) a.epochs = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--resume")) a.resume = argv[i + 1];
    if (!std::strcmp(argv[i], "--steps")) a.steps = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--out")) a.out = argv[i + 1];
    if (!std::strcmp(argv[i], "--stall-at-step"))
      a.stall_at = std::atoi(argv[i + 1]);
  }
  return a;
}

LearnerOptions MakeLearnerOptions(int world, int epochs) {
  LearnerOptions lo;
  lo.micro_batch = 4;
  lo.global_units = kSegments * kDecisions / world;  // this rank's share
  lo.max_policy_lag = 1;
  lo.lr = 1e-2;
  // One pass: running advantage moments are per rank (not normalised here).
  // --epochs E > 1: PPO epochs over the whole batch (one minibatch), the
  // advantages normalised by the whole global batch's moments.
  lo.ppo_epochs = epochs;
  lo.minibatches = 1;
  lo.normalize_advantages = epochs > 1;
  return lo;
}

// Runs args.steps steps on this rank's share of the fixed global batch;
// returns the process's exit code so far (0 to go on).
int TrainSteps(LearnerCore& core, const Args& args, int rank, int world) {
  std::vector<std::unique_ptr<RolloutSegment>> segs;
  for (int i = rank; i < kSegments; i += world)
    segs.push_back(std::make_unique<RolloutSegment>(testutil::SmallShape()));
  for (int step = 0; step < args.steps; ++step) {
    if (step == args.stall_at && rank == 1) {
      std::printf("stalled\n");
      std::fflush(stdout);
      pause();
    }
    std::vector<RolloutSegment*> mine;
    for (int i = rank, k = 0; i < kSegments; i += world, ++k) {
      Fill(segs[k].get(), core.version(),
           static_cast<uint32_t>(1000 * core.version() + i));
      mine.push_back(segs[k].get());
    }
    core.Add(mine);
    while (core.CanTrain()) core.TrainMicroBatch();
    if (!core.ReadyToStep()) {
      std::fprintf(stderr, "rank %d: batch incomplete at step %d\n", rank,
                   step);
      return 1;
    }
    const LearnerStepStats st = core.Step();
    if (!core.group_status().ok()) {
      std::fprintf(stderr, "%s\n", core.group_status().ToString().c_str());
      return 1;
    }
    std::printf("rank %d step %d version %llu loss %.6f skipped %d\n", rank,
                step, static_cast<unsigned long long>(st.version), st.loss,
                st.skipped ? 1 : 0);
    std::fflush(stdout);
    core.TakeConsumed();
  }
  return 0;
}

// Writes the parameters, flattened float32, to OUT.rankR.
int WriteParameters(const TinyVLA& net, const std::string& out, int rank) {
  std::ofstream f(out + ".rank" + std::to_string(rank), std::ios::binary);
  for (const at::Tensor& p : net->parameters()) {
    const at::Tensor c = p.detach().to(torch::kFloat).contiguous();
    f.write(reinterpret_cast<const char*>(c.data_ptr<float>()),
            static_cast<std::streamsize>(c.numel() * sizeof(float)));
  }
  f.close();
  if (!f) {
    std::fprintf(stderr, "cannot write %s\n", out.c_str());
    return 1;
  }
  return 0;
}

int Run(int argc, char** argv) {
  const Args args = ParseArgs(argc, argv);
  torch::set_num_threads(1);
  absl::StatusOr<std::unique_ptr<GradientReducer>> reducer =
      JoinProcessGroupFromEnvironment("gloo", absl::Seconds(10),
                                      /*alone_is_local=*/false);
  if (!reducer.ok()) {
    std::fprintf(stderr, "%s\n", reducer.status().ToString().c_str());
    return 1;
  }
  const int rank = (*reducer)->rank(), world = (*reducer)->world_size();
  // Rank-dependent start: SyncParameters must make them equal.
  torch::manual_seed(static_cast<uint64_t>(rank));
  auto net = TinyVLA(testutil::SmallNet());
  uint64_t version = 0;
  if (!args.resume.empty()) {
    absl::StatusOr<LoadedCheckpoint> ck = LoadCheckpoint(args.resume);
    if (!ck.ok()) return Fail(ck.status());
    net = ck->net;
    version = ck->version;
  }
  auto policy = std::make_shared<TinyVLAPolicy>(net, version);
  LearnerCore core(policy, torch::ones({1, 4}, torch::kLong),
                   torch::full({1}, 4, torch::kLong),
                   MakeLearnerOptions(world, args.epochs), version,
                   reducer->get());
  if (absl::Status s = core.SyncParameters(); !s.ok()) return Fail(s);
  if (!args.resume.empty()) {
    if (absl::Status s = core.LoadTrainingState(args.resume, version); !s.ok())
      return Fail(s);
  }
  if (int rc = TrainSteps(core, args, rank, world); rc != 0) return rc;
  if (!args.save.empty()) {
    if (rank == 0) {
      absl::Status s = policy->Save(args.save, TextTokenizer::Build({"a b c"}),
                                    core.version());
      if (!s.ok()) return Fail(s);
    }
    if (absl::Status s = core.SaveTrainingState(args.save); !s.ok())
      return Fail(s);
  }
  return WriteParameters(net, args.out, rank);
}

}  // namespace
}  // namespace rlvla3

int main(int argc, char** argv) { return rlvla3::Run(argc, argv); }
