// rlvla3::kube: CLUSTER.yaml parsing and checking (defaults, bad values as
// ConfigErrors naming file and key, the run config checked against the
// spec). Part of kube_manifests_test.
#include "services/kube/cluster_spec.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "runtime/config_schema.h"
#include "tests/test_dir.h"

namespace rlvla3::kube {
namespace {

TEST(KubeClusterSpec, DefaultsFillEveryKeyNotGiven) {
  const testutil::TestDir dir;
  std::ofstream(dir.File("run.yaml")) << "run:\n  name: r\n";
  absl::StatusOr<ClusterSpec> s = ParseClusterSpec(
      "name: job\nimage: img:1\nconfig: run.yaml\n", dir.File("cluster.yaml"));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->ns, "rl-vla3");
  EXPECT_EQ(s->config_path,
            std::filesystem::path(dir.File("run.yaml")).lexically_normal());
  EXPECT_EQ(s->learner.replicas, 1);
  EXPECT_EQ(s->learner.gpus, 1);
  EXPECT_EQ(s->inference.gpus, 1);
  EXPECT_EQ(s->rollout.gpus, 0);
  EXPECT_EQ(s->learner.port, 50051);
  EXPECT_EQ(s->inference.port, 50052);
  EXPECT_EQ(s->rollout.port, 50053);
  EXPECT_EQ(s->rendezvous_port, 29500);
  EXPECT_EQ(s->storage.size, "20Gi");
  EXPECT_EQ(s->storage.access_mode, "ReadWriteOnce");
  EXPECT_EQ(s->scraper.ns, "monitoring");
  EXPECT_TRUE(s->scraper.pod_labels.empty());
  s = ParseClusterSpec(
      "name: job\nimage: img:1\nconfig: run.yaml\nlearner: {replicas: 3}\n",
      dir.File("cluster.yaml"));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->storage.access_mode, "ReadWriteMany");
  EXPECT_TRUE(CheckRunConfig(*s).ok());
}

TEST(KubeClusterSpec, BadValuesAreConfigErrorsNamingFileAndKey) {
  const testutil::TestDir dir;
  std::ofstream(dir.File("run.yaml")) << "run:\n  name: r\n";
  const std::string ok = "name: job\nimage: img:1\nconfig: run.yaml\n";
  const struct {
    std::string yaml, key;
  } cases[] = {
      {ok + "learner:\n  replica: 2\n", "learner.replica"},
      {ok + "learner:\n  replicas: 0\n", "learner.replicas"},
      {ok + "rollout: {replicas: 1.5}\n", "rollout.replicas"},
      {ok + "inference: {gpus: -1}\n", "inference.gpus"},
      {ok + "learner: {memory: lots}\n", "learner.memory"},
      {ok + "storage: {access_mode: ReadOnlyMany}\n", "storage.access_mode"},
      {ok + "ports: {learner: 29500}\n", "ports.rendezvous"},
      {ok + "nmae: x\n", "nmae"},
      {ok + "token_file: missing.txt\n", "token_file"},
      {ok + "token_file: run.yaml\n", "token_file"},  // plaintext, not allowed
      {ok + "tls: {cert: run.yaml, key: run.yaml}\n", "tls.ca"},
      {ok + "tls: {cert: run.yaml, key: run.yaml, ca: none.crt}\n", "tls.ca"},
      {ok + "allow_plaintext_token: maybe\n", "allow_plaintext_token"},
      {ok + "ports: {metrics: 70000}\n", "ports.metrics"},
      {ok + "scraper: {namespace: Mon_itoring}\n", "scraper.namespace"},
      {ok + "scraper: {pod_labels: {\"bad key!\": x}}\n",
       "scraper.pod_labels.bad key!"},
      {ok + "scraper: {pod_labels: {app: \"-x\"}}\n", "scraper.pod_labels.app"},
      {ok + "scraper: {pod_labels: [a]}\n", "scraper.pod_labels"},
      {ok + "scraper: {pods: x}\n", "scraper.pods"},
      {"name: Bad_Name\nimage: img\nconfig: run.yaml\n", "name"},
      {"name: job\nimage: img\nconfig: nowhere.yaml\n", "config"},
      {"name: job\nconfig: run.yaml\n", "image"},
      {"name: [a]\nimage: img\nconfig: run.yaml\n", "name"},
  };
  for (const auto& c : cases) {
    absl::StatusOr<ClusterSpec> s =
        ParseClusterSpec(c.yaml, dir.File("cluster.yaml"));
    ASSERT_FALSE(s.ok()) << c.yaml;
    EXPECT_TRUE(IsConfigError(s.status())) << s.status();
    const std::string m(s.status().message());
    EXPECT_NE(m.find(dir.File("cluster.yaml") + ": " + c.key),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("expected"), std::string::npos) << m;
  }
  const absl::StatusOr<ClusterSpec> bad_yaml =
      ParseClusterSpec("name: [unclosed\n", dir.File("cluster.yaml"));
  EXPECT_TRUE(IsConfigError(bad_yaml.status())) << bad_yaml.status();
  EXPECT_TRUE(IsConfigError(LoadClusterSpec(dir.File("absent.yaml")).status()));
}

TEST(KubeClusterSpec, SyncRunNeedsOneInferenceReplica) {
  const testutil::TestDir dir;
  std::ofstream(dir.File("run.yaml")) << "run:\n  mode: sync\n";
  absl::StatusOr<ClusterSpec> s = ParseClusterSpec(
      "name: job\nimage: img\nconfig: run.yaml\ninference: {replicas: 2}\n",
      dir.File("cluster.yaml"));
  ASSERT_TRUE(s.ok()) << s.status();
  const absl::Status st = CheckRunConfig(*s);
  EXPECT_TRUE(IsConfigError(st)) << st;
  EXPECT_NE(st.message().find("inference.replicas"), std::string::npos);
}

// A run config that puts a role on a GPU needs that role's pods to ask for
// one; the error names the CLUSTER.yaml key and the run config's.
TEST(KubeClusterSpec, RolesOnAGpuMustAskForOne) {
  const testutil::TestDir dir;
  std::ofstream(dir.File("run.yaml"))
      << "learner:\n  device: cuda\ninference:\n  device: cuda:0\n"
         "env:\n  render_backend: gpu\n";
  const struct {
    const char* roles;
    const char* key;  // "" if the spec is fine
    const char* run_key;
  } cases[] = {
      {"learner: {gpus: 0}\ninference: {gpus: 1}\nrollout: {gpus: 1}\n",
       "learner.gpus", "learner.device: cuda"},
      {"learner: {gpus: 1}\ninference: {gpus: 0}\nrollout: {gpus: 1}\n",
       "inference.gpus", "inference.device: cuda:0"},
      {"learner: {gpus: 1}\ninference: {gpus: 1}\n", "rollout.gpus",
       "env.render_backend: gpu"},
      {"learner: {gpus: 1}\ninference: {gpus: 1}\nrollout: {gpus: 1}\n", "",
       ""},
  };
  for (const auto& c : cases) {
    absl::StatusOr<ClusterSpec> s = ParseClusterSpec(
        absl::StrCat("name: job\nimage: img\nconfig: run.yaml\n", c.roles),
        dir.File("cluster.yaml"));
    ASSERT_TRUE(s.ok()) << s.status();
    const absl::Status st = CheckRunConfig(*s);
    if (std::string(c.key).empty()) {
      EXPECT_TRUE(st.ok()) << st;
      continue;
    }
    EXPECT_TRUE(IsConfigError(st)) << c.roles << st;
    const std::string m(st.message());
    EXPECT_NE(m.find(absl::StrCat(dir.File("cluster.yaml"), ": ", c.key)),
              std::string::npos)
        << m;
    EXPECT_NE(m.find(c.run_key), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace rlvla3::kube
