// The memory model's arithmetic (services/plan/memory_model.h): parts that
// add up, AdamW's state sharded over the ranks (ZeRO-1), activations that
// grow with the micro-batch and halve in bf16. What LibTorch really
// allocates is compared in bench/memory_figures (docs/planning.md).
#include "services/plan/memory_model.h"

#include <gtest/gtest.h>

namespace rlvla3 {
namespace {

TEST(MemoryModel, AdamWStateIsShardedOverTheRanksAndThePartsAddUp) {
  PolicyShape p;
  p.parameters = 1000000;
  LearnerMemoryOptions o;
  o.micro_batch = 8;
  const MemoryEstimate one = LearnerMemory(p, o);
  EXPECT_EQ(one.Of("weights"), 4e6);
  EXPECT_EQ(one.Of("gradients"), 4e6);
  EXPECT_EQ(one.Of("adamw"), 8e6);
  EXPECT_EQ(one.Of("reducer buckets"), 0);
  o.ranks = 4;
  const MemoryEstimate four = LearnerMemory(p, o);
  EXPECT_EQ(four.Of("adamw"), 2e6);
  EXPECT_EQ(four.Of("reducer buckets"), 4e6);
  double sum = 0;
  for (const MemoryPart& part : four.parts) sum += part.bytes;
  EXPECT_DOUBLE_EQ(sum, four.total_bytes);
}

// TinyVLA's default shape: S = 2 x 36 + 16 + 2 = 90 tokens; per block
// 16 S d + 2 h S^2 values; the stems and heads as counted.
TEST(MemoryModel, ActivationsFollowTheTokenCountAndTheValueWidth) {
  PolicyShape p;
  EXPECT_EQ(p.Tokens(), 90);
  const double blocks = 2 * (16.0 * 90 * 128 + 2.0 * 4 * 90 * 90);
  const double stems = 2 * (3.0 * 64 * 64 + 2.0 * 32 * 64 + 128.0 * 64);
  const double heads = 3.0 * 4 * 7 * 256;
  EXPECT_DOUBLE_EQ(ActivationBytesPerSample(p, 4),
                   4 * (blocks + stems + heads));
  EXPECT_DOUBLE_EQ(ActivationBytesPerSample(p, 2),
                   ActivationBytesPerSample(p, 4) / 2);
  LearnerMemoryOptions o;
  o.micro_batch = 16;
  const double at16 = LearnerMemory(p, o).Of("activations");
  o.micro_batch = 32;
  EXPECT_DOUBLE_EQ(LearnerMemory(p, o).Of("activations"), 2 * at16);
}

TEST(MemoryModel, ARolloutPodHoldsItsEnvsAndTheirSegments) {
  const MemoryEstimate m = RolloutHostMemory(32, 4e6, 16, 25000);
  EXPECT_EQ(m.Of("envs"), 32 * 4e6);
  EXPECT_EQ(m.Of("segments"), 32 * 16 * 25000.0);
}

}  // namespace
}  // namespace rlvla3
