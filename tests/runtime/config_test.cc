#include "runtime/config.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/test_dir.h"

namespace rlvla3 {
namespace {

std::string WriteTemp(const testutil::TestDir& dir, const std::string& name,
                      const std::string& text) {
  const std::string path = dir.File(name);
  std::ofstream(path) << text;
  return path;
}

TEST(Config, DefaultsWithoutFile) {
  absl::StatusOr<Config> c = LoadConfig("", {});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->batcher.max_batch, 32);
  EXPECT_EQ(c->queues.request.overflow, "block");
  EXPECT_EQ(c->run.mode, "async");
}

TEST(Config, FileThenOverridesApplyInOrder) {
  const testutil::TestDir dir;
  const std::string path = WriteTemp(
      dir, "ok.yaml",
      "run:\n  seed: 7\n  mode: sync\n"
      "batcher:\n  max_batch: 64\n  max_wait_ms: 0.5\n"
      "queues:\n  request:\n    capacity: 128\n    overflow: drop_oldest\n");
  absl::StatusOr<Config> c =
      LoadConfig(path, {"batcher.max_batch=16", "metrics.csv=true"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->run.seed, 7);
  EXPECT_EQ(c->run.mode, "sync");
  EXPECT_EQ(c->batcher.max_batch, 16);
  EXPECT_DOUBLE_EQ(c->batcher.max_wait_ms, 0.5);
  EXPECT_EQ(c->queues.request.capacity, 128);
  EXPECT_EQ(c->queues.request.ToOptions().overflow,
            OverflowPolicy::kDropOldest);
  EXPECT_TRUE(c->metrics.csv);
  EXPECT_EQ(c->batcher.ToOptions().max_wait, absl::Microseconds(500));
}

TEST(Config, UnknownKeyNamesFileKeyAndKnownKeys) {
  const testutil::TestDir dir;
  const std::string path =
      WriteTemp(dir, "unknown.yaml", "batcher:\n  max_batchh: 3\n");
  absl::StatusOr<Config> c = LoadConfig(path, {});
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(IsConfigError(c.status()));
  EXPECT_EQ(c.status().message(),
            path +
                ": batcher.max_batchh: expected a known key under batcher "
                "(max_batch, max_wait_ms, idle_poll_ms)");
}

TEST(Config, UnknownSection) {
  const testutil::TestDir dir;
  const std::string path = WriteTemp(dir, "section.yaml", "learnr:\n  lr: 1\n");
  absl::StatusOr<Config> c = LoadConfig(path, {});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(
      c.status().message().find(path + ": learnr: expected a known key ("),
      absl::string_view::npos)
      << c.status();
}

TEST(Config, WrongTypeNamesValueAndExpectation) {
  const testutil::TestDir dir;
  const std::string path =
      WriteTemp(dir, "type.yaml", "batcher:\n  max_wait_ms: soon\n");
  absl::StatusOr<Config> c = LoadConfig(path, {});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(
      c.status().message(),
      path +
          ": batcher.max_wait_ms = \"soon\": expected a number in [0, 10000]");
}

TEST(Config, OutOfRangeAndBadChoice) {
  absl::StatusOr<Config> c = LoadConfig("", {"queues.request.capacity=0"});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(),
            "--set: queues.request.capacity = \"0\": expected an integer in "
            "[1, 131008]");
  c = LoadConfig("", {"queues.trajectory.overflow=spill"});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(
      c.status().message(),
      "--set: queues.trajectory.overflow = \"spill\": expected one of: block, "
      "drop_oldest, reject");
  c = LoadConfig("", {"metrics.interval_s=0"});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("expected a number in (0, 3600]"),
            absl::string_view::npos);
}

TEST(Config, BadFaultPlanNamesTheKeyAndTheEntry) {
  absl::StatusOr<Config> c =
      LoadConfig("", {"env.faults=throw@1:5, explode@2:3"});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(),
            "--set: env.faults = \"throw@1:5, explode@2:3\": expected "
            "comma-separated KIND@ENV:STEP; \"explode@2:3\": unknown kind "
            "\"explode\" (KIND is one of throw, hang, wrong_shape, nan)");
  EXPECT_FALSE(LoadConfig("", {"env.faults=nan@1:0"}).ok());
  EXPECT_TRUE(LoadConfig("", {"env.faults=nan@1:4,hang@0:9"}).ok());
}

TEST(Config, SyncAcrossProcessesNamesItsOneInferenceServer) {
  absl::StatusOr<Config> c =
      LoadConfig("", {"run.mode=sync", "cluster.inference_servers=2"});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find(
                "--set: cluster.inference_servers = \"2\": expected 1 when "
                "run.mode is sync"),
            std::string::npos)
      << c.status().message();
  EXPECT_TRUE(
      LoadConfig("", {"run.mode=async", "cluster.inference_servers=2"}).ok());
}

TEST(Config, DevicesAreNamedAsCpuOrCudaAndNcclNeedsAGpuLearner) {
  absl::StatusOr<Config> c = LoadConfig("", {});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->inference.device, "cpu");
  EXPECT_EQ(c->learner.device, "cpu");
  EXPECT_EQ(c->learner.precision, "fp32");
  // A GPU this machine may lack still loads: roles check where they start.
  c = LoadConfig("", {"inference.device=cuda:3", "learner.device=cuda",
                      "learner.precision=bf16"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->inference.device, "cuda:3");
  c = LoadConfig("", {"inference.device=gpu0"});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find(
                "--set: inference.device = \"gpu0\": expected cpu, cuda or "
                "cuda:N"),
            std::string::npos)
      << c.status().message();
  EXPECT_FALSE(LoadConfig("", {"learner.precision=fp16"}).ok());
  c = LoadConfig("", {"cluster.learner_backend=nccl"});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("learner.device = \"cpu\": expected "
                                      "cuda or cuda:N when "
                                      "cluster.learner_backend is nccl"),
            std::string::npos)
      << c.status().message();
  EXPECT_TRUE(
      LoadConfig("", {"cluster.learner_backend=nccl", "learner.device=cuda"})
          .ok());
}

TEST(Config, BoolsIntegersAndListsAreStrict) {
  const testutil::TestDir dir;
  EXPECT_FALSE(LoadConfig("", {"metrics.csv=maybe"}).ok());
  EXPECT_FALSE(LoadConfig("", {"batcher.max_batch=2.5"}).ok());
  const std::string path =
      WriteTemp(dir, "list.yaml", "batcher:\n  max_batch: [1, 2]\n");
  absl::StatusOr<Config> c = LoadConfig(path, {});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(
      c.status().message(),
      path +
          ": batcher.max_batch = \"a list\": expected an integer in [1, 4096]");
}

TEST(Config, SectionGivenAScalar) {
  const testutil::TestDir dir;
  const std::string path = WriteTemp(dir, "scalar.yaml", "batcher: 5\n");
  absl::StatusOr<Config> c = LoadConfig(path, {});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(),
            path + ": batcher = \"5\": expected a mapping (it is a section)");
}

TEST(Config, SyntaxErrorHasLineAndColumn) {
  const testutil::TestDir dir;
  const std::string path =
      WriteTemp(dir, "syntax.yaml", "batcher:\n  max_batch: [1, 2\n");
  absl::StatusOr<Config> c = LoadConfig(path, {});
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(IsConfigError(c.status()));
  EXPECT_EQ(c.status().message().rfind(path + ":", 0), 0u) << c.status();
  EXPECT_NE(c.status().message().find("expected valid YAML"),
            absl::string_view::npos);
}

TEST(Config, MissingFile) {
  absl::StatusOr<Config> c = LoadConfig("/nonexistent/rl.yaml", {});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(),
            "/nonexistent/rl.yaml: (document): expected a readable file");
}

TEST(Config, MalformedOverride) {
  absl::StatusOr<Config> c = LoadConfig("", {"batcher.max_batch"});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(),
            "--set: batcher.max_batch: expected key=value");
}

TEST(Config, CrossFieldCheck) {
  absl::StatusOr<Config> c =
      LoadConfig("", {"queues.request.capacity=8", "batcher.max_batch=16"});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(),
            "--set: batcher.max_batch = \"16\": expected at most "
            "queues.request.capacity (8)");
}

TEST(Config, PrintedConfigLoadsBackToTheSameValues) {
  const testutil::TestDir dir;
  absl::StatusOr<Config> a = LoadConfig(
      "", {"run.name=round trip", "batcher.max_wait_ms=0.25", "run.seed=42"});
  ASSERT_TRUE(a.ok());
  const std::string yaml = ConfigToYaml(*a);
  const std::string path = WriteTemp(dir, "printed.yaml", yaml);
  absl::StatusOr<Config> b = LoadConfig(path, {});
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(ConfigToYaml(*b), yaml);
  EXPECT_EQ(b->run.name, "round trip");
  EXPECT_EQ(b->run.seed, 42);
}

// Fields of every section of `c` equal a default-constructed Config's, read
// directly rather than through the schema (so a key the schema stopped
// binding is still compared).
void ExpectDefaultFields(const Config& c) {
  const Config d;
  EXPECT_EQ(c.run.name, d.run.name);
  EXPECT_EQ(c.run.seed, d.run.seed);
  EXPECT_EQ(c.run.mode, d.run.mode);
  EXPECT_EQ(c.cluster.rollout_workers, d.cluster.rollout_workers);
  EXPECT_EQ(c.cluster.base_port, d.cluster.base_port);
  EXPECT_EQ(c.cluster.learner_ranks, d.cluster.learner_ranks);
  EXPECT_EQ(c.env.num_envs, d.env.num_envs);
  EXPECT_EQ(c.env.image_width, d.env.image_width);
  EXPECT_EQ(c.env.tasks, d.env.tasks);
  EXPECT_EQ(c.threads.torch_intra_op, d.threads.torch_intra_op);
  EXPECT_EQ(c.threads.env_workers, d.threads.env_workers);
  EXPECT_EQ(c.queues.request.capacity, d.queues.request.capacity);
  EXPECT_EQ(c.queues.request.overflow, d.queues.request.overflow);
  EXPECT_EQ(c.queues.trajectory.capacity, d.queues.trajectory.capacity);
  EXPECT_EQ(c.batcher.max_batch, d.batcher.max_batch);
  EXPECT_DOUBLE_EQ(c.batcher.max_wait_ms, d.batcher.max_wait_ms);
  EXPECT_DOUBLE_EQ(c.metrics.interval_s, d.metrics.interval_s);
  EXPECT_EQ(c.metrics.jsonl, d.metrics.jsonl);
  EXPECT_EQ(c.metrics.csv, d.metrics.csv);
  EXPECT_EQ(c.selfcheck.num_envs, d.selfcheck.num_envs);
  EXPECT_EQ(c.selfcheck.steps_per_env, d.selfcheck.steps_per_env);
  EXPECT_EQ(c.policy.kind, d.policy.kind);
  EXPECT_EQ(c.policy.d_model, d.policy.d_model);
  EXPECT_EQ(c.policy.chunk, d.policy.chunk);
  EXPECT_EQ(c.inference.device, d.inference.device);
  EXPECT_EQ(c.learner.device, d.learner.device);
  EXPECT_EQ(c.learner.precision, d.learner.precision);
  EXPECT_EQ(c.sft.demos_per_task, d.sft.demos_per_task);
  EXPECT_DOUBLE_EQ(c.sft.lr, d.sft.lr);
  EXPECT_EQ(c.rl.algorithm, d.rl.algorithm);
  EXPECT_EQ(c.rl.rollout_len, d.rl.rollout_len);
  EXPECT_DOUBLE_EQ(c.rl.lr, d.rl.lr);
  EXPECT_DOUBLE_EQ(c.rl.gamma, d.rl.gamma);
  EXPECT_EQ(c.rl.checkpoint_every, d.rl.checkpoint_every);
}

TEST(Config, EmptyFileMeansDefaults) {
  const testutil::TestDir dir;
  const std::string path = WriteTemp(dir, "empty.yaml", "");
  absl::StatusOr<Config> c = LoadConfig(path, {});
  ASSERT_TRUE(c.ok()) << c.status();
  // Every key, compared through the schema: a default the loader changed
  // (or a key it failed to bind) shows as a differing line. The printed
  // defaults name every section, so this compares more than two empty texts.
  const std::string defaults = ConfigToYaml(Config{});
  for (const char* section : {"run:", "cluster:", "env:", "threads:", "queues:",
                              "batcher:", "metrics:", "policy:", "inference:",
                              "learner:", "sft:", "rl:", "selfcheck:"}) {
    EXPECT_NE(defaults.find(section), std::string::npos) << section;
  }
  EXPECT_EQ(ConfigToYaml(*c), defaults);
  ExpectDefaultFields(*c);
  EXPECT_EQ(c->rl.algorithm, "ppo");
  // A comment-only file is empty too.
  const std::string comments = WriteTemp(dir, "comments.yaml", "# nothing\n");
  absl::StatusOr<Config> d = LoadConfig(comments, {});
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(ConfigToYaml(*d), defaults);
  ExpectDefaultFields(*d);
}

// Every config the project ships loads (README.md's and docs/' commands name
// them).
TEST(Config, EveryShippedConfigLoads) {
  int n = 0;
  for (const auto& e :
       std::filesystem::directory_iterator(RLVLA3_SOURCE_DIR "/configs")) {
    if (e.path().extension() != ".yaml") continue;
    absl::StatusOr<Config> c = LoadConfig(e.path().string(), {});
    EXPECT_TRUE(c.ok()) << e.path() << ": " << c.status();
    ++n;
  }
  EXPECT_GE(n, 7);
  // The node bench: GPU roles, 4 rollout processes of 16 envs on 2 env
  // workers each (NVIDIA's EGL scales across processes, not threads).
  absl::StatusOr<Config> node =
      LoadConfig(RLVLA3_SOURCE_DIR "/configs/bench_node.yaml", {});
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_EQ(node->inference.device, "cuda");
  EXPECT_EQ(node->learner.device, "cuda");
  EXPECT_EQ(node->env.num_envs, 16);
  EXPECT_EQ(node->threads.env_workers, 2);
  EXPECT_EQ(node->cluster.rollout_workers, 4);
}

}  // namespace
}  // namespace rlvla3
