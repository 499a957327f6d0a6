// rlvla3::kube: CLUSTER.yaml parsing, the rendered manifests (deterministic,
// equal to the golden file, the token never printed), pod summaries and the
// child-process runner kubectl goes through.
//
// The golden file tests/deploy/cluster_golden.yaml is what
// `rl-vla3 up tests/deploy/cluster.yaml --dry-run` prints. After an intended
// change to the manifests, regenerate it and review the diff:
//   RLVLA3_UPDATE_GOLDEN=1 build/tests/kube_manifests_test
//   git diff tests/deploy/cluster_golden.yaml
#include "services/kube/manifests.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/config_schema.h"
#include "services/kube/cluster_spec.h"
#include "services/kube/kubectl.h"
#include "tests/test_dir.h"

namespace rlvla3::kube {
namespace {

const std::string kDeployDir = std::string(RLVLA3_SOURCE_DIR) + "/tests/deploy";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

ClusterSpec FixtureSpec() {
  absl::StatusOr<ClusterSpec> spec =
      LoadClusterSpec(kDeployDir + "/cluster.yaml");
  EXPECT_TRUE(spec.ok()) << spec.status();
  return spec.ok() ? *spec : ClusterSpec{};
}

std::string DryRun(const ClusterSpec& spec) {
  return JoinManifests(
      RenderManifests(spec, ReadRunConfig(spec).value(), SecretValues{}));
}

// The documents of a rendered stream, by "Kind/name".
std::map<std::string, YAML::Node> Objects(const std::string& yaml) {
  std::map<std::string, YAML::Node> out;
  for (const YAML::Node& doc : YAML::LoadAll(yaml)) {
    out[doc["kind"].as<std::string>() + "/" +
        doc["metadata"]["name"].as<std::string>()] = doc;
  }
  return out;
}

TEST(KubeManifests, RenderingIsDeterministic) {
  const std::string a = DryRun(FixtureSpec());
  const std::string b = DryRun(FixtureSpec());
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.find("\t"), std::string::npos);
}

TEST(KubeManifests, MatchesTheGoldenFile) {
  const std::string golden_path = kDeployDir + "/cluster_golden.yaml";
  const std::string rendered = DryRun(FixtureSpec());
  if (const char* update = std::getenv("RLVLA3_UPDATE_GOLDEN");
      update != nullptr && std::string(update) == "1") {
    std::ofstream(golden_path) << rendered;
    GTEST_SKIP() << "rewrote " << golden_path;
  }
  EXPECT_EQ(rendered, ReadFile(golden_path))
      << "the manifests changed; if intended, regenerate the golden file "
         "(RLVLA3_UPDATE_GOLDEN=1, see the top of this file)";
}

TEST(KubeManifests, DryRunNeverPrintsTheToken) {
  const ClusterSpec spec = FixtureSpec();
  const std::string token = ReadToken(spec).value();
  ASSERT_FALSE(token.empty());
  const std::string dry = DryRun(spec);
  EXPECT_EQ(dry.find(token), std::string::npos);
  EXPECT_NE(dry.find("<redacted: from token.fixture>"), std::string::npos);
  // `up` puts the real one in the Secret, and only there.
  const auto objects = Objects(JoinManifests(RenderManifests(
      spec, ReadRunConfig(spec).value(), SecretValues{token, {}, {}, {}})));
  EXPECT_EQ(objects.at("Secret/kube-fixture-token")["stringData"]["token"]
                .as<std::string>(),
            token);
}

TEST(KubeManifests, PodsGetTheirRolesCommandLines) {
  const auto objects = Objects(DryRun(FixtureSpec()));
  const YAML::Node learner =
      objects.at("StatefulSet/kube-fixture-learner")["spec"];
  EXPECT_EQ(learner["serviceName"].as<std::string>(), "kube-fixture-learner");
  EXPECT_EQ(learner["replicas"].as<int>(), 2);
  EXPECT_EQ(learner["podManagementPolicy"].as<std::string>(), "Parallel");
  const YAML::Node c = learner["template"]["spec"]["containers"][0];
  EXPECT_EQ(c["env"][0]["value"].as<std::string>(),
            "kube-fixture-learner-0.kube-fixture-learner.rl-vla3-test.svc."
            "cluster.local");
  EXPECT_EQ(c["env"][2]["name"].as<std::string>(), "WORLD_SIZE");
  EXPECT_TRUE(c["env"][2]["value"].IsScalar());
  EXPECT_EQ(c["env"][2]["value"].Tag(), "!");  // quoted: a string, not 2
  EXPECT_EQ(c["resources"]["limits"]["nvidia.com/gpu"].as<std::string>(), "1");

  const YAML::Node rollout = objects.at("StatefulSet/kube-fixture-rollout");
  std::vector<std::string> args;
  for (const YAML::Node& a :
       rollout["spec"]["template"]["spec"]["containers"][0]["args"]) {
    args.push_back(a.as<std::string>());
  }
  const std::vector<std::string> want_prefix = {
      "serve",
      "rollout",
      "--config",
      "/etc/rl-vla3/run.yaml",
      "--listen",
      "0.0.0.0:50053",
      "--learner",
      "kube-fixture-learner-0.kube-fixture-learner:50051,"
      "kube-fixture-learner-1.kube-fixture-learner:50051",
      "--inference",
      "kube-fixture-inference-0.kube-fixture-inference:50052",
      "--worker",
      "$(RANK)"};
  ASSERT_GE(args.size(), want_prefix.size());
  EXPECT_EQ(
      std::vector<std::string>(args.begin(), args.begin() + want_prefix.size()),
      want_prefix);
}

// CLUSTER.yaml's `set` lists: the spec's reach every role's pods, a role's
// only that role's, after the spec's; a list item without "=" names its key;
// and the run config is checked as each role will load it.
TEST(KubeClusterSpec, OverridesReachTheirRolesPodsOnly) {
  const testutil::TestDir dir;
  std::ofstream(dir.File("run.yaml")) << "rl:\n  ppo_epochs: 1\n";
  const std::string head = "name: job\nimage: img\nconfig: run.yaml\n";
  absl::StatusOr<ClusterSpec> spec =
      ParseClusterSpec(head +
                           "set: [rl.ppo_epochs=3]\n"
                           "learner: {gpus: 1, set: [learner.device=cuda]}\n"
                           "inference: {replicas: 2, gpus: 1}\n",
                       dir.File("cluster.yaml"));
  ASSERT_TRUE(spec.ok()) << spec.status();
  ASSERT_TRUE(CheckRunConfig(*spec).ok()) << CheckRunConfig(*spec);
  const auto objects = Objects(DryRun(*spec));
  const auto args = [&](const std::string& role) {
    std::string joined;
    for (const YAML::Node& a :
         objects.at("StatefulSet/job-" +
                    role)["spec"]["template"]["spec"]["containers"][0]["args"])
      joined += a.as<std::string>() + " ";
    return joined;
  };
  EXPECT_NE(args("learner").find("--set rl.ppo_epochs=3 --set "
                                 "learner.device=cuda"),
            std::string::npos)
      << args("learner");
  EXPECT_NE(args("inference").find("--set rl.ppo_epochs=3"), std::string::npos);
  EXPECT_EQ(args("inference").find("learner.device"), std::string::npos);
  EXPECT_NE(args("rollout").find("--inference job-inference-0.job-inference:"
                                 "50052,job-inference-1.job-inference:50052"),
            std::string::npos)
      << args("rollout");

  // The learner's override puts it on a GPU its pods do not ask for.
  spec = ParseClusterSpec(
      head + "learner: {gpus: 0, set: [learner.device=cuda]}\n",
      dir.File("cluster.yaml"));
  ASSERT_TRUE(spec.ok()) << spec.status();
  absl::Status st = CheckRunConfig(*spec);
  EXPECT_TRUE(IsConfigError(st)) << st;
  EXPECT_NE(st.message().find("learner.gpus"), std::string::npos) << st;
  // An override the run config does not know.
  spec = ParseClusterSpec(head + "set: [rl.no_such_key=1]\n",
                          dir.File("cluster.yaml"));
  ASSERT_TRUE(spec.ok()) << spec.status();
  st = CheckRunConfig(*spec);
  EXPECT_TRUE(IsConfigError(st)) << st;
  EXPECT_NE(st.message().find("rl.no_such_key"), std::string::npos) << st;
  // Not key=value.
  spec = ParseClusterSpec(head + "inference: {set: [bf16]}\n",
                          dir.File("cluster.yaml"));
  EXPECT_TRUE(IsConfigError(spec.status())) << spec.status();
  EXPECT_NE(spec.status().message().find("inference.set"), std::string::npos);
}

TEST(KubeManifests, TlsComesFromASecretAndProbesConnectOverTcp) {
  const ClusterSpec spec = FixtureSpec();
  const auto objects = Objects(DryRun(spec));
  const YAML::Node secret = objects.at("Secret/kube-fixture-tls");
  EXPECT_EQ(secret["stringData"]["tls.key"].as<std::string>(),
            "<redacted: from tls/tls.key>");
  for (const char* role : {"learner", "inference", "rollout"}) {
    const YAML::Node pod = objects.at(std::string("StatefulSet/kube-fixture-") +
                                      role)["spec"]["template"];
    const YAML::Node c = pod["spec"]["containers"][0];
    std::string args;
    for (const YAML::Node& a : c["args"]) args += a.as<std::string>() + " ";
    EXPECT_NE(args.find("cluster.tls_cert=/etc/rl-vla3-tls/tls.crt"),
              std::string::npos)
        << role << ": " << args;
    EXPECT_NE(args.find("cluster.tls_server_name=rl-vla3"), std::string::npos)
        << args;
    EXPECT_EQ(args.find("allow_plaintext_token"), std::string::npos) << args;
    // The kubelet's gRPC probe has no client certificate.
    EXPECT_TRUE(c["readinessProbe"]["tcpSocket"].IsDefined()) << role;
    EXPECT_FALSE(c["readinessProbe"]["grpc"].IsDefined()) << role;
    bool mounted = false;
    for (const YAML::Node& v : pod["spec"]["volumes"]) {
      mounted |=
          v["name"].as<std::string>() == "tls" &&
          v["secret"]["secretName"].as<std::string>() == "kube-fixture-tls";
    }
    EXPECT_TRUE(mounted) << role;
  }
  // `up` puts the files' contents in the Secret.
  const std::vector<std::string> pem = ReadTlsFiles(spec).value();
  const auto applied = Objects(JoinManifests(RenderManifests(
      spec, ReadRunConfig(spec).value(), {"t", pem[0], pem[1], pem[2]})));
  EXPECT_EQ(applied.at("Secret/kube-fixture-tls")["stringData"]["ca.crt"]
                .as<std::string>(),
            pem[2]);
}

TEST(KubeManifests, PodsServeMetricsPrometheusFinds) {
  const auto objects = Objects(DryRun(FixtureSpec()));
  for (const char* role : {"learner", "inference", "rollout"}) {
    const YAML::Node pod = objects.at(std::string("StatefulSet/kube-fixture-") +
                                      role)["spec"]["template"];
    const YAML::Node notes = pod["metadata"]["annotations"];
    EXPECT_EQ(notes["prometheus.io/scrape"].as<std::string>(), "true") << role;
    EXPECT_EQ(notes["prometheus.io/port"].as<std::string>(), "9464") << role;
    EXPECT_EQ(notes["prometheus.io/path"].as<std::string>(), "/metrics");
    const YAML::Node c = pod["spec"]["containers"][0];
    bool port = false;
    for (const YAML::Node& p : c["ports"]) {
      port |= p["name"].as<std::string>() == "metrics" &&
              p["containerPort"].as<int>() == 9464;
    }
    EXPECT_TRUE(port) << role;
    std::string args;
    for (const YAML::Node& a : c["args"]) args += a.as<std::string>() + " ";
    EXPECT_NE(args.find("metrics.prometheus_port=9464"), std::string::npos)
        << args;
    EXPECT_NE(args.find("metrics.prometheus_host=0.0.0.0"), std::string::npos)
        << args;
  }
  // The job's pods talk only to each other; the metrics port is open to the
  // scraper CLUSTER.yaml names (its namespace and its pods' labels) alone.
  const YAML::Node ingress =
      objects.at("NetworkPolicy/kube-fixture-same-job")["spec"]["ingress"];
  ASSERT_EQ(ingress.size(), 2u);
  EXPECT_EQ(ingress[1]["ports"][0]["port"].as<int>(), 9464);
  ASSERT_EQ(ingress[1]["from"].size(), 1u);
  const YAML::Node scraper = ingress[1]["from"][0];
  EXPECT_EQ(
      scraper["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"]
          .as<std::string>(),
      "monitoring");
  ASSERT_EQ(scraper["podSelector"]["matchLabels"].size(), 1u);
  EXPECT_EQ(scraper["podSelector"]["matchLabels"]["app.kubernetes.io/name"]
                .as<std::string>(),
            "prometheus");
}

TEST(KubeManifests, WithoutPodLabelsTheScrapersWholeNamespaceMayScrape) {
  ClusterSpec spec = FixtureSpec();
  spec.scraper = ScraperSpec{"observability", {}};
  const auto objects = Objects(DryRun(spec));
  const YAML::Node from = objects.at(
      "NetworkPolicy/kube-fixture-same-job")["spec"]["ingress"][1]["from"];
  ASSERT_EQ(from.size(), 1u);
  EXPECT_EQ(
      from[0]["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"]
          .as<std::string>(),
      "observability");
  EXPECT_FALSE(from[0]["podSelector"].IsDefined());
}

TEST(KubeManifests, ConfigMapHoldsTheRunConfig) {
  ClusterSpec spec = FixtureSpec();
  for (const std::string& text :
       {std::string("run:\n  name: x\n"), std::string("  indented: 1\n"),
        std::string("a: 1\r\nb: \"two\"\r\n"), std::string("k: v")}) {
    const auto objects =
        Objects(JoinManifests(RenderManifests(spec, text, SecretValues{})));
    // Literal blocks end in one newline; other text is quoted as it is.
    std::string want = text;
    if (want.back() != '\n') want += "\n";
    const std::string got =
        objects.at("ConfigMap/kube-fixture-config")["data"]["run.yaml"]
            .as<std::string>();
    EXPECT_EQ(got, want);
  }
}

TEST(KubePods, SummaryCountsReadyPodsPerRole) {
  const std::string json = R"({"items": [
    {"metadata": {"name": "j-learner-0", "labels":
       {"app.kubernetes.io/component": "learner"}},
     "status": {"phase": "Running", "conditions": [{"type": "Ready",
       "status": "True"}], "containerStatuses": [{"restartCount": 1}]}},
    {"metadata": {"name": "j-learner-1", "labels":
       {"app.kubernetes.io/component": "learner"}},
     "status": {"phase": "Pending", "containerStatuses": [{"restartCount": 0,
       "state": {"waiting": {"reason": "ImagePullBackOff"}}}]}},
    {"metadata": {"name": "j-rollout-0", "deletionTimestamp": "x", "labels":
       {"app.kubernetes.io/component": "rollout"}},
     "status": {"phase": "Running", "conditions": [{"type": "Ready",
       "status": "True"}]}},
    {"metadata": {"name": "j-inference-x", "labels":
       {"app.kubernetes.io/component": "inference"}},
     "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled",
       "status": "False", "reason": "Unschedulable"}]}}]})";
  absl::StatusOr<std::vector<PodState>> pods = ParsePods(json);
  ASSERT_TRUE(pods.ok()) << pods.status();
  ASSERT_EQ(pods->size(), 4u);
  ClusterSpec spec;
  spec.learner.replicas = 2;
  const std::vector<RoleState> roles = Summarize(spec, *pods);
  EXPECT_EQ(ProgressLine(roles),
            "learner 1/2 ready (ImagePullBackOff)  inference 0/1 ready "
            "(Unschedulable)  rollout 0/1 ready");
  EXPECT_EQ(roles[0].restarts, 1);
  EXPECT_EQ(roles[2].phases.at("Terminating"), 1);
  EXPECT_FALSE(AllReady(roles));
  EXPECT_FALSE(ParsePods("not json").ok());
  EXPECT_FALSE(ParsePods("{}").ok());
}

TEST(KubeCommand, FeedsStdinCapturesOutputAndExitCode) {
  std::string big(1 << 20, 'x');  // more than a pipe holds
  absl::StatusOr<CommandResult> r =
      RunCommand({"/bin/cat"}, big, absl::Seconds(30));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->exit_code, 0);
  EXPECT_EQ(r->out, big);
  r = RunCommand({"/bin/sh", "-c", "echo out; echo err >&2; exit 3"}, "",
                 absl::Seconds(30));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_EQ(r->out, "out\n");
  EXPECT_EQ(r->err, "err\n");
  // A child that never reads its stdin does not stall us (EPIPE, no SIGPIPE).
  r = RunCommand({"/bin/true"}, big, absl::Seconds(30));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->exit_code, 0);
  r = RunCommand({"/bin/sleep", "10"}, "", absl::Milliseconds(200));
  EXPECT_TRUE(absl::IsDeadlineExceeded(r.status())) << r.status();
  EXPECT_FALSE(RunCommand({"/nonexistent/kubectl"}, "", absl::Seconds(5)).ok());
}

TEST(KubeCommand, FindsExecutablesOnPathOnly) {
  const std::string saved = std::getenv("PATH") ? std::getenv("PATH") : "";
  setenv("PATH", "/nonexistent:/bin", 1);
  EXPECT_EQ(FindOnPath("sh").value_or(""), "/bin/sh");
  setenv("PATH", "/nonexistent", 1);
  EXPECT_TRUE(absl::IsNotFound(FindOnPath("sh").status()));
  const absl::StatusOr<Kubectl> k = Kubectl::Find();
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.status().message(),
            "kubectl not found on PATH: install kubectl or use --dry-run to "
            "print the manifests");
  setenv("PATH", saved.c_str(), 1);
}

}  // namespace
}  // namespace rlvla3::kube
