// `rl-vla3 plan`'s arithmetic (services/plan/cluster_plan.h): the ring
// all-reduce's cost, the splits tried on CPU and GPU offers, the choice for
// a goal, one server's slice standing for the whole, and a CLUSTER.yaml that
// `up`'s own parser takes. Simulated time only.
#include "services/plan/cluster_plan.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "services/kube/cluster_spec.h"
#include "services/plan/cluster_yaml.h"

namespace rlvla3 {
namespace {

PlanInputs Inputs() {
  PlanInputs in;
  StageCostProfile& p = in.costs;
  p.cores = 16;
  p.env.step_s_mean = 0.002;
  p.env.step_s_cv = 0.3;
  p.env.host_bytes_per_env = 50e6;
  p.inference.by_batch = {{1, 0.002}, {64, 0.0083}};      // 2 ms + 0.1 ms/obs
  p.learner.by_samples = {{64, 0.030}, {128, 0.050}};     // 10 ms + 0.31 ms
  p.allreduce.by_bytes = {{1e6, 0.0011}, {1e7, 0.0101}};  // 0.1 ms + 1 GB/s
  p.policy.parameters = 1000000;
  in.run.num_envs = 16;
  in.run.env_workers = 4;
  in.run.rollout_len = 8;
  in.run.max_batch = 16;
  in.run.micro_batch = 32;
  in.run.policy.parameters = p.policy.parameters;
  in.offer.cores = 16;
  in.seconds = 30;
  return in;
}

TEST(ClusterPlan, TheRingAllReduceGrowsWithRanksAndTheLinkSetsItsRate) {
  PlanInputs in = Inputs();
  Split s;
  double t = -1;
  CostsOf(in, s, &t);
  EXPECT_EQ(t, 0);      // one rank
  s.learner_ranks = 2;  // as measured: 0.1 ms + 4 MB at 1 GB/s
  CostsOf(in, s, &t);
  EXPECT_NEAR(t, 0.0001 + 4e6 * 1e-9, 1e-9);
  s.learner_ranks = 4;  // 3 hop pairs, 1.5 x the bytes
  CostsOf(in, s, &t);
  EXPECT_NEAR(t, 3 * 0.0001 + 1.5 * 4e6 * 1e-9, 1e-9);
  in.offer.link_gbps = 80;  // 10 GB/s; half the measured pair per hop
  CostsOf(in, s, &t);
  EXPECT_NEAR(t, 6 * 0.00005 + 1.5 * 4e6 / 10e9, 1e-9);
}

TEST(ClusterPlan, OnACpuNodeEverySplitSharesItsCores) {
  const PlanInputs in = Inputs();
  const std::vector<Split> all = Candidates(in);
  ASSERT_FALSE(all.empty());
  for (const Split& s : all) {
    const PipelineShape sh = ShapeOf(in, s, false);
    EXPECT_EQ(sh.cpu.cores, 16);
    EXPECT_EQ(sh.envs, s.rollout_workers * 16);
    EXPECT_EQ(sh.global_batch, s.rollout_workers * 16 * 8);
  }
}

// On one CPU node `train`'s one process is a candidate too, and only the
// splits across processes pay the wire; with the wire's cost the fastest is
// one process; a CLUSTER.yaml (processes only) leaves it out; a GPU offer
// never has it.
TEST(ClusterPlan, OnOneNodeTheRolesInOneProcessSkipTheWire) {
  PlanInputs in = Inputs();
  in.costs.wire.observation_cpu_s = 0.0005;
  in.costs.wire.observation_wait_s = 0.0002;
  in.costs.wire.sample_cpu_s = 1e-5;
  in.costs.wire.weights_cpu_s = 0.003;
  const std::vector<Split> all = Candidates(in);
  Split one, apart;
  for (const Split& s : all) (s.in_process ? one : apart) = s;
  ASSERT_TRUE(one.in_process);
  ASSERT_FALSE(apart.in_process);
  EXPECT_EQ(CostsOf(in, one, nullptr).wire_obs_s, 0);
  EXPECT_EQ(CostsOf(in, apart, nullptr).wire_obs_s, 0.0005);
  EXPECT_EQ(CostsOf(in, apart, nullptr).wire_weights_s, 0.003);
  one.rollout_workers = apart.rollout_workers = 1;
  one.env_workers = apart.env_workers = 4;
  one.inference_servers = apart.inference_servers = 1;
  one.learner_ranks = apart.learner_ranks = 1;
  EXPECT_GT(Forecast(in, one, false).async.frames_per_s,
            Forecast(in, apart, false).async.frames_per_s);
  for (const Split& s : Candidates(in, /*processes_only=*/true))
    EXPECT_FALSE(s.in_process);
  in.offer.gpus = 2;
  in.offer.gpu_memory_gib = 80;
  for (const Split& s : Candidates(in)) EXPECT_FALSE(s.in_process);
}

TEST(ClusterPlan, TheBestSplitIsTheFastestThatFitsOrTheSmallestMeetingTheGoal) {
  PlanInputs in = Inputs();
  in.offer.gpus = 4;
  in.offer.gpu_memory_gib = 80;
  const std::vector<SplitForecast> all = ForecastSplits(in, Candidates(in));
  const SplitForecast* best = Best(all, PlanGoal{});
  ASSERT_NE(best, nullptr);
  for (const SplitForecast& f : all) {
    if (f.fits) EXPECT_LE(f.async.samples_per_s, best->async.samples_per_s);
    EXPECT_LE(f.split.inference_servers + f.split.learner_ranks, 4)
        << "more GPU roles than GPUs tried";
  }
  PlanGoal goal;
  goal.frames_per_s = 0.5 * best->async.frames_per_s;
  const SplitForecast* small = Best(all, goal);
  ASSERT_NE(small, nullptr);
  EXPECT_GE(small->async.frames_per_s, goal.frames_per_s);
  EXPECT_LE(small->split.inference_servers + small->split.learner_ranks,
            best->split.inference_servers + best->split.learner_ranks);
  // A GPU too small for the learner: nothing fits.
  in.offer.gpu_memory_gib = 0.001;
  EXPECT_EQ(Best(ForecastSplits(in, Candidates(in)), PlanGoal{}), nullptr);
}

// Four alike inference servers: one server's slice, scaled by four, is the
// whole run's forecast, within what pooling changes (simulated whole, any
// env may take any worker and join any server's batch; in the runtime an
// env keeps to its pod's workers and its server, as in the slice).
TEST(ClusterPlan, OneServersSliceStandsForTheWholeRun) {
  PlanInputs in = Inputs();
  in.offer.gpus = 8;
  in.offer.gpu_memory_gib = 80;
  in.seconds = 60;
  const Split s{4, 16, 4, 4, 2};
  const SplitForecast sliced = Forecast(in, s);
  // The whole, unsliced: the same split on shared GPUs that are never short.
  PlanInputs whole = in;
  StageCosts c = CostsOf(whole, s, nullptr);
  PipelineShape sh = ShapeOf(whole, s, false);
  const PipelinePrediction p = SimulatePipeline(c, sh, {60.0, 1});
  EXPECT_NEAR(sliced.async.frames_per_s, p.frames_per_s, 0.1 * p.frames_per_s);
  EXPECT_NEAR(sliced.async.samples_per_s, p.samples_per_s,
              0.1 * p.samples_per_s);
}

TEST(ClusterPlan, ItsClusterYamlIsOneUpReadsAsIs) {
  PlanInputs in = Inputs();
  in.offer.gpus = 4;
  in.offer.gpu_memory_gib = 80;
  const SplitForecast f = Forecast(in, Split{1, 32, 8, 2, 2});
  const std::string dir = ::testing::TempDir() + "/plan_yaml";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/run.yaml") << "run:\n  name: x\n";
  ClusterYamlOptions o;
  o.name = "planned";
  o.image = "ghcr.io/example/rl-vla3:0.3.0-cuda";
  o.config = "run.yaml";
  const std::string yaml = ClusterYaml(f, in, o);
  absl::StatusOr<kube::ClusterSpec> spec =
      kube::ParseClusterSpec(yaml, dir + "/CLUSTER.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status() << "\n" << yaml;
  EXPECT_EQ(spec->learner.replicas, 2);
  EXPECT_EQ(spec->inference.replicas, 2);
  EXPECT_EQ(spec->rollout.replicas, 1);
  EXPECT_EQ(spec->learner.gpus, 1);
  EXPECT_EQ(spec->rollout.gpus, 0);
  EXPECT_NE(yaml.find("cluster.learner_backend=nccl"), std::string::npos);
  EXPECT_NE(yaml.find("env.num_envs=32"), std::string::npos);
}

}  // namespace
}  // namespace rlvla3
