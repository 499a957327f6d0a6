// The engine end to end on real MuJoCo envs (rendered at 32x32) and a small
// TinyVLA: sync mode's barriers, async mode's overlap, GRPO groups.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdlib>

#include "envs/task.h"
#include "policies/tiny_vla_policy.h"
#include "policies/torchscript_policy.h"
#include "services/engine/local_engine.h"
#include "services/options/engine_config.h"
#include "services/options/role_setup.h"
#include "tests/test_dir.h"

namespace rlvla3 {
namespace {

constexpr char kTask[] = "lift_the_red_cube";

Config SmallConfig(const std::string& mode) {
  absl::StatusOr<Config> c = LoadConfig(
      "", {"run.mode=" + mode, "env.num_envs=4", "env.image_width=32",
           "env.image_height=32", "rl.rollout_len=4", "rl.micro_batch=8",
           "rl.duration_s=60", "rl.max_steps=3", "rl.timeline=true",
           "rl.execute_steps=2", "policy.chunk=2", "metrics.interval_s=0.2",
           "threads.env_workers=2", "env.tasks=lift_the_red_cube"});
  EXPECT_TRUE(c.ok()) << c.status();
  return *c;
}

EngineParts SmallParts(const Config& c) {
  torch::manual_seed(0);
  EngineParts p;
  p.tokenizer = TextTokenizer::Build({FindTask(kTask)->instruction});
  p.policy = std::make_shared<TinyVLAPolicy>(
      TinyVLA(TinyVLAOptions()
                  .vocab_size(p.tokenizer.size())
                  .max_text_len(c.policy.max_text_len)
                  .d_model(32)
                  .heads(2)
                  .layers(1)
                  .grid(2)
                  .patch(8)
                  .stem_channels(8)
                  .chunk(2)),
      0);
  return p;
}

absl::StatusOr<std::unique_ptr<LocalEngine>> MakeEngine(
    const Config& c, const EngineParts& parts) {
  absl::StatusOr<LocalEngineOptions> o = LocalEngineOptionsFromConfig(c, parts);
  if (!o.ok()) return o.status();
  return LocalEngine::Create(*o, parts);
}

struct Overlaps {
  int updates = 0;
  int env_steps = 0;
  int overlapping = 0;  // env steps overlapping a learner update
};

Overlaps Count(const std::vector<StageInterval>& timeline) {
  Overlaps o;
  std::vector<StageInterval> updates;
  for (const auto& i : timeline) {
    if (i.stage == StageInterval::kLearnerUpdate) updates.push_back(i);
  }
  o.updates = static_cast<int>(updates.size());
  for (const auto& i : timeline) {
    if (i.stage != StageInterval::kEnvStep) continue;
    ++o.env_steps;
    for (const auto& u : updates) {
      if (i.begin_ns < u.end_ns && u.begin_ns < i.end_ns) {
        ++o.overlapping;
        break;
      }
    }
  }
  return o;
}

TEST(LocalEngine, SuccessByStartVersionBucketsEpisodesByTheirFirstPolicy) {
  std::vector<EpisodeRecord> eps = {{0, 10, true}, {1, 20, false},
                                    {2, 30, true}, {3, 40, true},
                                    {5, 50, true}, {5, 60, false}};
  const std::vector<SuccessBucket> b = SuccessByStartVersion(eps, 2);
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[0].version_lo, 0u);
  EXPECT_EQ(b[0].version_hi, 2u);
  EXPECT_EQ(b[1].version_lo, 3u);
  EXPECT_EQ(b[1].version_hi, 5u);
  EXPECT_EQ(b[0].episodes, 3);
  EXPECT_EQ(b[0].successes, 2);
  EXPECT_EQ(b[1].episodes, 3);
  EXPECT_EQ(b[1].successes, 2);
  EXPECT_DOUBLE_EQ(b[0].mean_start_frame, 20.0);
  // Versions continue from a checkpoint's: the ranges start at the lowest.
  const std::vector<SuccessBucket> late =
      SuccessByStartVersion({{800, 0, true}, {803, 0, false}}, 2);
  ASSERT_EQ(late.size(), 2u);
  EXPECT_EQ(late[0].version_lo, 800u);
  EXPECT_EQ(late[1].version_hi, 803u);
  EXPECT_EQ(late[1].successes, 0);
  // More buckets than versions: one per version.
  EXPECT_EQ(SuccessByStartVersion({{0, 0, true}}, 4).size(), 1u);
  EXPECT_TRUE(SuccessByStartVersion({}, 4).empty());
}

// Episodes that started too close to the end of the run to finish unless they
// were short (successes) would bias the last bucket upward: they are left
// out, versions included.
TEST(LocalEngine, SuccessByStartVersionLeavesOutLateEpisodes) {
  std::vector<EpisodeRecord> eps = {
      {0, 0, false}, {1, 0, true}, {2, 0, false}, {3, 0, false}};
  eps.push_back({3, 0, true, /*late=*/true});
  eps.push_back({9, 0, true, /*late=*/true});
  const std::vector<SuccessBucket> b = SuccessByStartVersion(eps, 2);
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[1].version_hi, 3u);
  EXPECT_EQ(b[1].episodes, 2);
  EXPECT_EQ(b[1].successes, 0);
  EXPECT_TRUE(SuccessByStartVersion({{4, 0, true, true}}, 4).empty());
}

TEST(LocalEngine, SyncModeNoEnvStepsWhileTheLearnerTrains) {
  const Config c = SmallConfig("sync");
  absl::StatusOr<std::unique_ptr<LocalEngine>> e = MakeEngine(c, SmallParts(c));
  ASSERT_TRUE(e.ok()) << e.status();
  const absl::Status run = (*e)->Run({});
  ASSERT_TRUE(run.ok()) << run;
  const EngineSummary s = (*e)->Summary();
  EXPECT_EQ(s.optimizer_steps, 3);
  EXPECT_EQ(s.trained_samples, 3 * 16);
  EXPECT_EQ(s.lag_max, 0.0);                      // on-policy
  EXPECT_DOUBLE_EQ(s.inference_batch_mean, 4.0);  // every env in one batch
  const Overlaps o = Count((*e)->Timeline());
  EXPECT_GE(o.updates, 3);
  EXPECT_GT(o.env_steps, 3 * 16);
  EXPECT_EQ(o.overlapping, 0);
}

TEST(LocalEngine, AsyncModeStepsEnvsWhileTheLearnerTrains) {
  Config c = SmallConfig("async");
  c.rl.max_steps = 6;
  absl::StatusOr<std::unique_ptr<LocalEngine>> e = MakeEngine(c, SmallParts(c));
  ASSERT_TRUE(e.ok()) << e.status();
  const absl::Status run = (*e)->Run({});
  ASSERT_TRUE(run.ok()) << run;
  const EngineSummary s = (*e)->Summary();
  EXPECT_GE(s.optimizer_steps, 6);
  // Admission bounds the lag; the few samples of a straggling env that still
  // fall behind are dropped, never trained on.
  EXPECT_LE(s.lag_max, 1.0);
  EXPECT_LT(s.dropped_samples, s.trained_samples / 4);
  const Overlaps o = Count((*e)->Timeline());
  EXPECT_GT(o.overlapping, 0);  // the same check that sync passes
}

TEST(LocalEngine, GrpoTrainsOnCompleteGroups) {
  Config c = SmallConfig("async");
  c.rl.algorithm = "grpo";
  c.rl.grpo_group_size = 2;
  c.rl.max_steps = 1;
  // Shaped returns differ within a group (an untrained policy's sparse
  // returns are all 0: such groups are never trained).
  c.env.shaped_reward = true;
  absl::StatusOr<std::unique_ptr<LocalEngine>> e = MakeEngine(c, SmallParts(c));
  ASSERT_TRUE(e.ok()) << e.status();
  const absl::Status run = (*e)->Run({});
  ASSERT_TRUE(run.ok()) << run;
  const EngineSummary s = (*e)->Summary();
  EXPECT_GE(s.optimizer_steps, 1);
  EXPECT_GE(s.episodes, 4u);
  EXPECT_GT(s.trained_samples, 0);
}

// Any policy trains: a module scripted by Debian's python3-torch goes through
// the same engine (rollout, inference, learner) as TinyVLA, its weights move,
// and the checkpoint it writes loads back.
TEST(LocalEngine, TrainsAUsersTorchScriptPolicy) {
  if (std::string(RLVLA3_PYTHON).empty()) {
    GTEST_SKIP() << "no python3 with torch found at configure time "
                    "(cmake/RlVla3Python.cmake)";
  }
  const rlvla3::testutil::TestDir dir;
  const std::string module = dir.File("policy.pt");
  const std::string cmd = std::string(RLVLA3_PYTHON) + " " + RLVLA3_SOURCE_DIR +
                          "/scripts/export_torchscript_policy.py " + module +
                          " --chunk 2";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  Config c = SmallConfig("async");
  c.policy.kind = "torchscript";
  c.policy.path = module;
  c.rl.max_steps = 2;
  absl::StatusOr<EngineParts> parts = BuildEngineParts(c);
  ASSERT_TRUE(parts.ok()) << parts.status();
  std::vector<at::Tensor> before;
  for (const at::Tensor& p : parts->policy->Parameters().weights)
    before.push_back(p.detach().clone());
  absl::StatusOr<std::unique_ptr<LocalEngine>> e = MakeEngine(c, *parts);
  ASSERT_TRUE(e.ok()) << e.status();
  const absl::Status run = (*e)->Run({});
  ASSERT_TRUE(run.ok()) << run;
  const EngineSummary s = (*e)->Summary();
  EXPECT_GE(s.optimizer_steps, 2);
  EXPECT_EQ(s.skipped_steps, 0);
  const std::vector<at::Tensor> after = (*e)->policy().Parameters().weights;
  ASSERT_EQ(after.size(), before.size());
  bool moved = false;
  for (size_t i = 0; i < after.size(); ++i)
    moved |= !torch::equal(after[i].detach(), before[i]);
  EXPECT_TRUE(moved) << "two optimizer steps left every weight unchanged";

  const std::string ck = dir.File("ck");
  ASSERT_TRUE((*e)->policy().Save(ck, (*e)->tokenizer(), s.version).ok());
  absl::StatusOr<PolicyCheckpoint> back = LoadPolicyCheckpoint(ck);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->version, s.version);
  EXPECT_NE(dynamic_cast<TorchScriptPolicy*>(back->policy.get()), nullptr);
  const std::vector<at::Tensor> loaded = back->policy->Parameters().weights;
  ASSERT_EQ(loaded.size(), after.size());
  for (size_t i = 0; i < loaded.size(); ++i)
    EXPECT_TRUE(torch::equal(loaded[i], after[i].detach())) << i;
}

// learner.device "cuda" on a machine of 4 GPUs: learner ranks sharing the
// machine take GPUs of their own (local rank modulo the GPUs, as their NCCL
// group does); a device named with its index, or the CPU, stays as named.
TEST(RankDevice, LearnerRanksOfOneMachineTakeGpusOfTheirOwn) {
  const at::Device cuda("cuda");
  EXPECT_EQ(RankDevice(cuda, 0, 4), at::Device("cuda:0"));
  EXPECT_EQ(RankDevice(cuda, 1, 4), at::Device("cuda:1"));
  EXPECT_EQ(RankDevice(cuda, 5, 4), at::Device("cuda:1"));
  EXPECT_EQ(RankDevice(cuda, 3, 1), at::Device("cuda:0"));
  EXPECT_EQ(RankDevice(at::Device("cuda:2"), 1, 4), at::Device("cuda:2"));
  EXPECT_EQ(RankDevice(at::Device("cpu"), 1, 4), at::Device("cpu"));
  EXPECT_EQ(RankDevice(cuda, 1, 0), cuda);  // no GPU: the role check says so
}

}  // namespace
}  // namespace rlvla3
