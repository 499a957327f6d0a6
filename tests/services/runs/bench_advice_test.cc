// The bench's advice, from the figures it measured.
#include <gtest/gtest.h>

#include <string>

#include "services/runs/bench.h"

namespace rlvla3 {
namespace {

// The bench's advice for an env-bound run (issue 28: on the GPU node it
// advised adding env workers where adding them made the run slower).
TEST(BenchAdvice, AddEnvWorkersOnlyWhereMoreMeasuredFaster) {
  StageAlone a;
  a.env.workers = 4;
  a.env.frames_per_s = 360;
  a.env_probe_workers = 8;
  a.env_probe_frames_per_s = 230;  // the NVIDIA EGL row of the issue
  std::string advice = EnvBoundAdvice(a);
  EXPECT_EQ(advice.find("add env workers"), std::string::npos) << advice;
  EXPECT_NE(advice.find("do not help here (4 env workers: 360 frames/s alone, "
                        "8: 230)"),
            std::string::npos)
      << advice;
  a.env_probe_frames_per_s = 600;  // Mesa llvmpipe's
  advice = EnvBoundAdvice(a);
  EXPECT_NE(advice.find("add env workers (4 env workers: 360"),
            std::string::npos)
      << advice;
  a.env_probe_workers = 0;  // nothing more to try
  advice = EnvBoundAdvice(a);
  EXPECT_EQ(advice.find("add env workers"), std::string::npos) << advice;
}

// The H200 node (docs/experiments.md, 2026-11-26, issue 28): env workers in
// one process stopped scaling past two (NVIDIA EGL), rollout processes of
// two workers each scaled 2.97x. Rollout processes are advised only where
// the bench measured them faster.
TEST(BenchAdvice, RolloutProcessesOnlyWhereTheyMeasuredFaster) {
  StageAlone a;
  a.env.workers = 2;
  a.env.frames_per_s = 752;
  a.env_probe_workers = 4;
  a.env_probe_frames_per_s = 558;
  std::string advice = EnvBoundAdvice(a);
  EXPECT_EQ(advice.find("rollout processes do"), std::string::npos) << advice;
  EXPECT_NE(advice.find("measure rollout processes (--placement processes)"),
            std::string::npos)
      << advice;
  a.env_processes = 4;
  a.env_processes_frames_per_s = 2900;
  advice = EnvBoundAdvice(a);
  EXPECT_NE(advice.find("rollout processes do (4 processes: 2900 frames/s "
                        "alone): run the envs as cluster.rollout_workers"),
            std::string::npos)
      << advice;
  EXPECT_EQ(advice.find("add env workers"), std::string::npos) << advice;
  a.env_processes_frames_per_s = 760;  // no faster: not advised
  advice = EnvBoundAdvice(a);
  EXPECT_EQ(advice.find("rollout processes do"), std::string::npos) << advice;
  EXPECT_EQ(advice.find("measure rollout processes"), std::string::npos)
      << advice;
}

// The H200 bench (docs/experiments.md, 2026-11-26): a learner-bound run with
// the learner already on the GPU was told to "run the learner on a GPU".
TEST(BenchAdvice, AStageAlreadyOnAGpuIsNotToldToMoveToOne) {
  BenchResult r;
  std::string advice = StageBoundAdvice("learner", r);
  EXPECT_NE(advice.find("run the learner on a GPU"), std::string::npos)
      << advice;
  r.learner_device = "cuda:0";
  advice = StageBoundAdvice("learner", r);
  EXPECT_EQ(advice.find("on a GPU"), std::string::npos) << advice;
  EXPECT_NE(advice.find("cluster.learner_ranks"), std::string::npos) << advice;

  advice = StageBoundAdvice("inference", r);
  EXPECT_NE(advice.find("serve inference from a GPU"), std::string::npos)
      << advice;
  r.inference_device = "cuda";
  advice = StageBoundAdvice("inference", r);
  EXPECT_EQ(advice.find("GPU"), std::string::npos) << advice;
}

// The rollout processes share the machine's cores: on the 2-core VM
// (bench_libero_latency, 2026-11-26) the env stage alone across processes
// reached 370 frames/s, but one process's core budget was 270, and that is
// the processes' limit too. Where the cores are plenty (the H200 node) the
// env stage across processes is.
TEST(BenchLimits, RolloutProcessesShareTheCoreBudget) {
  BenchResult r;
  r.execute_steps = 2;
  r.alone.inference_obs_per_s = 670;    // x 2 = 1340 frames/s
  r.alone.learner_samples_per_s = 231;  // x 2 = 462
  r.alone.env_processes = 1;
  r.alone.env_processes_frames_per_s = 370;
  r.core_limit = 270;
  ProcessesBound p = ProcessesLimit(r);
  EXPECT_DOUBLE_EQ(p.frames_per_s, 270);
  EXPECT_EQ(p.bound, "cpu");
  r.core_limit = 10000;
  p = ProcessesLimit(r);
  EXPECT_DOUBLE_EQ(p.frames_per_s, 370);
  EXPECT_EQ(p.bound, "env");
  r.alone.learner_samples_per_s = 100;
  EXPECT_EQ(ProcessesLimit(r).bound, "learner");
  r.alone.env_processes = 0;  // not measured across processes
  EXPECT_DOUBLE_EQ(ProcessesLimit(r).frames_per_s, 0);
}

}  // namespace
}  // namespace rlvla3
