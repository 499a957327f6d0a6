// File: services/learner/optimizer_shards.h
// -----------------------------------------------------------------------------
// ZeRO-1 for the data-parallel learner: the optimizer state (AdamW's moments)
// is split across the ranks by parameter. Each parameter has one owner rank;
// a rank's optimizer holds only the parameters it owns, so the state memory
// per rank is about 1/world of the whole. After the gradients are averaged,
// each rank updates its own parameters and the ranks then gather them (every
// parameter takes its owner's value, GradientReducer::GatherShards).
//
// Checkpoints hold the sharded state: every rank writes the state of the
// parameters it owns to DIR/optimizer/shard-R-of-W.pt, keyed by the
// parameter's index, so a run can resume on any number of ranks: each rank
// reads every shard and keeps the parameters it owns under the new plan.
//
// Example:
//   std::vector<int> owners = AssignShardOwners(numels, world);
//   // ... build the AdamW over the parameters with owners[i] == rank ...
//   SaveOptimizerShard(dir, opt, params, owners, rank, world, state);
//   absl::StatusOr<LearnerTrainingState> s =
//       LoadOptimizerShards(dir, opt, params, owners, rank);
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_LEARNER_OPTIMIZER_SHARDS_H_
#define RLVLA3_SERVICES_LEARNER_OPTIMIZER_SHARDS_H_

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace torch::optim {
class AdamW;
}  // namespace torch::optim

namespace rlvla3 {

// The owner rank of each tensor (by element count): largest first, each onto
// the least loaded rank (ties: the lowest rank). The same on every rank.
std::vector<int> AssignShardOwners(absl::Span<const int64_t> numels,
                                   int world_size);

// What a learner carries across a restart besides weights and moments.
struct LearnerTrainingState {
  uint64_t version = 0;     // policy version (weight updates so far)
  int64_t steps_taken = 0;  // optimizer steps in the learner's life
  double lr = 0;            // the weights' (adapted) learning rate
  std::string rng;          // the minibatch shuffle's engine, as text
};

// Writes the state of the parameters `rank` owns (params[i] with
// owners[i] == rank) to DIR/optimizer/shard-RANK-of-WORLD.pt.
absl::Status SaveOptimizerShard(const std::string& dir,
                                torch::optim::AdamW& optimizer,
                                absl::Span<const at::Tensor> params,
                                absl::Span<const int> owners, int rank,
                                int world_size,
                                const LearnerTrainingState& state);

// Marks DIR/optimizer complete (DIR/optimizer/COMPLETE, naming the world
// size): call on one rank once every rank's shard is written.
absl::Status MarkOptimizerShardsComplete(const std::string& dir,
                                         int world_size);

// Reads every shard of DIR/optimizer (written at any world size; all of them
// must be there, and the COMPLETE mark) and restores the state of the
// parameters this rank owns now (owners[i] == rank). Errors name the file and
// the parameter.
absl::StatusOr<LearnerTrainingState> LoadOptimizerShards(
    const std::string& dir, torch::optim::AdamW& optimizer,
    absl::Span<const at::Tensor> params, absl::Span<const int> owners,
    int rank);

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_LEARNER_OPTIMIZER_SHARDS_H_
