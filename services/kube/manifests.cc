#include "services/kube/manifests.h"

#include <yaml-cpp/yaml.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "services/kube/pod_template.h"
#include "services/kube/yaml_writer.h"

namespace rlvla3::kube {
namespace {

using yaml::Bool;
using yaml::Int;
using yaml::Key;
using yaml::Str;

constexpr char kPodIndexField[] =
    "metadata.labels['apps.kubernetes.io/pod-index']";

// apiVersion, kind and metadata; leaves the object's mapping open.
void BeginObject(YAML::Emitter& e, const ClusterSpec& spec, const char* api,
                 const char* kind, const std::string& name,
                 const std::string& component) {
  e << YAML::BeginMap;
  Str(e, "apiVersion", api);
  Str(e, "kind", kind);
  Key(e, "metadata");
  e << YAML::BeginMap;
  Str(e, "name", name);
  if (!component.empty()) Str(e, "namespace", spec.ns);
  Key(e, "labels");
  Labels(e, spec, component);
  e << YAML::EndMap;
}

// Closes the object's mapping; the document is `comment` then the YAML.
Manifest Finish(YAML::Emitter& e, const char* kind, const std::string& name,
                const std::string& comment) {
  e << YAML::EndMap;
  return {kind, name, absl::StrCat(yaml::Comment(comment), e.c_str(), "\n")};
}

// ---- job-wide objects -------------------------------------------------------

Manifest RenderNamespace(const ClusterSpec& spec) {
  YAML::Emitter e;
  BeginObject(e, spec, "v1", "Namespace", spec.ns, "");
  return Finish(e, "Namespace", spec.ns,
                "Shared by every rl-vla3 job in it, so labelled with the "
                "app only; `down` leaves it.");
}

Manifest RenderConfigMap(const ClusterSpec& spec, const std::string& text) {
  YAML::Emitter e;
  const std::string name = ObjectName(spec, "config");
  BeginObject(e, spec, "v1", "ConfigMap", name, "config");
  Key(e, "data");
  e << YAML::BeginMap;
  yaml::Text(e, "run.yaml", text);
  e << YAML::EndMap;
  return Finish(e, "ConfigMap", name,
                absl::StrCat("The run config (", spec.config, "), mounted at ",
                             kConfigDir, "/run.yaml in every pod."));
}

// One "KEY: value" of a Secret's stringData; a placeholder without a value.
void SecretEntry(YAML::Emitter& e, const char* key,
                 const std::optional<std::string>& value,
                 const std::string& file) {
  Key(e, key);
  e << YAML::DoubleQuoted
    << (value ? *value : absl::StrCat("<redacted: from ", file, ">"));
}

// A Secret NAME-SUFFIX of `entries` (key, value or nullopt, source file).
struct SecretEntryOf {
  const char* key;
  const std::optional<std::string>& value;
  const std::string& file;
};
Manifest RenderSecretOf(const ClusterSpec& spec, const char* suffix,
                        const std::vector<SecretEntryOf>& entries,
                        const std::string& comment) {
  YAML::Emitter e;
  const std::string name = ObjectName(spec, suffix);
  BeginObject(e, spec, "v1", "Secret", name, suffix);
  Str(e, "type", "Opaque");
  Key(e, "stringData");
  e << YAML::BeginMap;
  for (const SecretEntryOf& x : entries) SecretEntry(e, x.key, x.value, x.file);
  e << YAML::EndMap;
  return Finish(e, "Secret", name, comment);
}

Manifest RenderSecret(const ClusterSpec& spec,
                      const std::optional<std::string>& token) {
  return RenderSecretOf(spec, "token", {{"token", token, spec.token_file}},
                        absl::StrCat("The shared token every role checks (",
                                     kTokenDir, "/token in every pod)."));
}

Manifest RenderTlsSecret(const ClusterSpec& spec, const SecretValues& v) {
  return RenderSecretOf(
      spec, "tls",
      {{"tls.crt", v.tls_cert, spec.tls.cert},
       {"tls.key", v.tls_key, spec.tls.key},
       {"ca.crt", v.tls_ca, spec.tls.ca}},
      absl::StrCat("Mutual TLS between the roles: every pod serves and calls "
                   "with tls.crt (",
                   kTlsDir, ") and accepts only peers signed by ca.crt."));
}

Manifest RenderStorage(const ClusterSpec& spec) {
  YAML::Emitter e;
  const std::string name = ObjectName(spec, "checkpoints");
  BeginObject(e, spec, "v1", "PersistentVolumeClaim", name, "checkpoints");
  Key(e, "spec");
  e << YAML::BeginMap;
  Key(e, "accessModes");
  e << YAML::BeginSeq << spec.storage.access_mode << YAML::EndSeq;
  if (!spec.storage.storage_class.empty()) {
    Str(e, "storageClassName", spec.storage.storage_class);
  }
  Key(e, "resources");
  e << YAML::BeginMap;
  Key(e, "requests");
  e << YAML::BeginMap;
  Str(e, "storage", spec.storage.size);
  e << YAML::EndMap << YAML::EndMap << YAML::EndMap;
  return Finish(
      e, "PersistentVolumeClaim", name,
      absl::StrCat("The learner's run folder (run.out_dir = ", kCheckpointDir,
                   "): checkpoints, metrics. `down` keeps it unless "
                   "--delete-data."));
}

void InstanceSelector(YAML::Emitter& e, const ClusterSpec& spec) {
  e << YAML::BeginMap;
  Key(e, "matchLabels");
  e << YAML::BeginMap;
  Str(e, "app.kubernetes.io/instance", spec.name);
  e << YAML::EndMap << YAML::EndMap;
}

// The scraper as the dry run tells it: "pods labelled a=b in namespace m".
std::string DescribeScraper(const ScraperSpec& s) {
  std::vector<std::string> labels;
  for (const auto& [key, value] : s.pod_labels)
    labels.push_back(absl::StrCat(key, "=", value));
  return absl::StrCat(
      labels.empty()
          ? "any pod"
          : absl::StrCat("pods labelled ", absl::StrJoin(labels, ", ")),
      " in namespace ", s.ns, " (CLUSTER.yaml scraper)");
}

// The metrics port, open to the scraper alone: its namespace (by the label
// Kubernetes sets on every namespace) and, if given, its pods' labels.
void MetricsIngress(YAML::Emitter& e, const ClusterSpec& spec) {
  e << YAML::BeginMap;
  Key(e, "from");
  e << YAML::BeginSeq << YAML::BeginMap;
  Key(e, "namespaceSelector");
  e << YAML::BeginMap;
  Key(e, "matchLabels");
  e << YAML::BeginMap;
  Str(e, "kubernetes.io/metadata.name", spec.scraper.ns);
  e << YAML::EndMap << YAML::EndMap;
  if (!spec.scraper.pod_labels.empty()) {
    Key(e, "podSelector");
    e << YAML::BeginMap;
    Key(e, "matchLabels");
    e << YAML::BeginMap;
    for (const auto& [key, value] : spec.scraper.pod_labels)
      Str(e, key.c_str(), value);
    e << YAML::EndMap << YAML::EndMap;
  }
  e << YAML::EndMap << YAML::EndSeq;
  Key(e, "ports");
  e << YAML::BeginSeq << YAML::BeginMap;
  Int(e, "port", spec.metrics_port);
  Str(e, "protocol", "TCP");
  e << YAML::EndMap << YAML::EndSeq << YAML::EndMap;
}

Manifest RenderNetworkPolicy(const ClusterSpec& spec) {
  YAML::Emitter e;
  const std::string name = ObjectName(spec, "same-job");
  BeginObject(e, spec, "networking.k8s.io/v1", "NetworkPolicy", name,
              "network");
  Key(e, "spec");
  e << YAML::BeginMap;
  Key(e, "podSelector");
  InstanceSelector(e, spec);
  Key(e, "policyTypes");
  e << YAML::Flow << YAML::BeginSeq << "Ingress" << YAML::EndSeq;
  Key(e, "ingress");
  e << YAML::BeginSeq << YAML::BeginMap;
  Key(e, "from");
  e << YAML::BeginSeq << YAML::BeginMap;
  Key(e, "podSelector");
  InstanceSelector(e, spec);
  e << YAML::EndMap << YAML::EndSeq << YAML::EndMap;
  if (spec.metrics_port != 0) MetricsIngress(e, spec);
  e << YAML::EndSeq << YAML::EndMap;
  return Finish(e, "NetworkPolicy", name,
                spec.metrics_port == 0
                    ? "The job's pods accept connections from the job's own "
                      "pods only (every port)."
                    : absl::StrCat("The job's pods accept connections from "
                                   "the job's own pods (every port), and "
                                   "on the metrics port ",
                                   spec.metrics_port, " from ",
                                   DescribeScraper(spec.scraper), "."));
}

// ---- the roles --------------------------------------------------------------

Manifest RenderService(const ClusterSpec& spec, const RolePod& pod,
                       bool headless, const std::string& comment) {
  YAML::Emitter e;
  const std::string name = ObjectName(spec, pod.role);
  BeginObject(e, spec, "v1", "Service", name, pod.role);
  Key(e, "spec");
  e << YAML::BeginMap;
  if (headless) {
    Str(e, "clusterIP", "None");
  } else {
    Str(e, "type", "ClusterIP");
  }
  // The learner ranks resolve rank 0 before any of them is ready.
  if (pod.role == "learner") Bool(e, "publishNotReadyAddresses", true);
  Key(e, "selector");
  Labels(e, spec, pod.role);
  Ports(e, pod.ports, "port");
  e << YAML::EndMap;
  return Finish(e, "Service", name, comment);
}

Manifest RenderWorkload(const ClusterSpec& spec, const RolePod& pod,
                        bool stateful, const std::string& comment) {
  YAML::Emitter e;
  const std::string name = ObjectName(spec, pod.role);
  const char* kind = stateful ? "StatefulSet" : "Deployment";
  BeginObject(e, spec, "apps/v1", kind, name, pod.role);
  Key(e, "spec");
  e << YAML::BeginMap;
  if (stateful) Str(e, "serviceName", name);
  Int(e, "replicas", pod.r->replicas);
  if (stateful) Str(e, "podManagementPolicy", "Parallel");
  PodTemplate(e, spec, pod);
  e << YAML::EndMap;
  return Finish(e, kind, name, comment);
}

// `serve ROLE --config ... --listen 0.0.0.0:PORT`, then `flags`, then the
// role's run-config overrides (RoleOverrides) and the token's file.
std::vector<std::string> ServeArgs(const ClusterSpec& spec,
                                   const std::string& role, const RoleSpec& r,
                                   const std::vector<std::string>& flags) {
  std::vector<std::string> args = {
      "serve",    role,
      "--config", absl::StrCat(kConfigDir, "/run.yaml"),
      "--listen", absl::StrCat("0.0.0.0:", r.port)};
  args.insert(args.end(), flags.begin(), flags.end());
  for (const std::string& o : RoleOverrides(spec, r)) {
    args.insert(args.end(), {"--set", o});
  }
  if (!spec.token_file.empty()) {
    args.insert(
        args.end(),
        {"--set", absl::StrCat("cluster.token_file=", kTokenDir, "/token")});
  }
  if (!spec.tls.cert.empty()) {
    args.insert(
        args.end(),
        {"--set", absl::StrCat("cluster.tls_cert=", kTlsDir, "/tls.crt"),
         "--set", absl::StrCat("cluster.tls_key=", kTlsDir, "/tls.key"),
         "--set", absl::StrCat("cluster.tls_ca=", kTlsDir, "/ca.crt")});
    if (!spec.tls.server_name.empty()) {
      args.insert(args.end(),
                  {"--set", "cluster.tls_server_name=" + spec.tls.server_name});
    }
  }
  if (spec.allow_plaintext_token) {
    args.insert(args.end(), {"--set", "cluster.allow_plaintext_token=true"});
  }
  if (spec.metrics_port != 0) {
    args.insert(args.end(),
                {"--set", "metrics.prometheus_host=0.0.0.0", "--set",
                 absl::StrCat("metrics.prometheus_port=", spec.metrics_port)});
  }
  return args;
}

// The role's gRPC port (`port`), then `more`, then the metrics port.
std::vector<Port> PortsOf(const ClusterSpec& spec, int64_t port,
                          std::vector<Port> more = {}) {
  std::vector<Port> out = {{"grpc", port}};
  out.insert(out.end(), more.begin(), more.end());
  if (spec.metrics_port != 0) out.push_back({"metrics", spec.metrics_port});
  return out;
}

RolePod LearnerPod(const ClusterSpec& spec) {
  RolePod pod;
  pod.role = "learner";
  pod.r = &spec.learner;
  pod.args = ServeArgs(spec, "learner", spec.learner,
                       {"--set", absl::StrCat("run.out_dir=", kCheckpointDir)});
  pod.env = {
      {"MASTER_ADDR",
       absl::StrCat(LearnerHost(spec, 0), ".", spec.ns, ".svc.cluster.local"),
       ""},
      {"MASTER_PORT", absl::StrCat(spec.rendezvous_port), ""},
      {"WORLD_SIZE", absl::StrCat(spec.learner.replicas), ""},
      {"RANK", "", kPodIndexField}};
  pod.ports =
      PortsOf(spec, spec.learner.port, {{"rendezvous", spec.rendezvous_port}});
  pod.checkpoints = true;
  return pod;
}

RolePod InferencePod(const ClusterSpec& spec) {
  RolePod pod;
  pod.role = "inference";
  pod.r = &spec.inference;
  pod.args = ServeArgs(spec, "inference", spec.inference,
                       {"--learner", absl::StrCat(LearnerHost(spec, 0), ":",
                                                  spec.learner.port)});
  pod.ports = PortsOf(spec, spec.inference.port);
  return pod;
}

RolePod RolloutPod(const ClusterSpec& spec) {
  RolePod pod;
  pod.role = "rollout";
  pod.r = &spec.rollout;
  std::vector<std::string> learners, servers;
  for (int64_t rank = 0; rank < spec.learner.replicas; ++rank) {
    learners.push_back(
        absl::StrCat(LearnerHost(spec, rank), ":", spec.learner.port));
  }
  // Every inference server by its own name: the worker shards its envs over
  // them and fails over itself (one Service address would pin each stream to
  // one server per connection).
  for (int64_t i = 0; i < spec.inference.replicas; ++i) {
    servers.push_back(
        absl::StrCat(InferenceHost(spec, i), ":", spec.inference.port));
  }
  pod.args =
      ServeArgs(spec, "rollout", spec.rollout,
                {"--learner", absl::StrJoin(learners, ","), "--inference",
                 absl::StrJoin(servers, ","), "--worker", "$(RANK)"});
  pod.env = {{"RANK", "", kPodIndexField}};
  if (spec.rollout.gpus > 0) {
    // EGL on the GPU: "graphics" makes the NVIDIA runtime mount its EGL.
    pod.env.push_back(
        {"NVIDIA_DRIVER_CAPABILITIES", "compute,utility,graphics", ""});
  }
  pod.ports = PortsOf(spec, spec.rollout.port);
  return pod;
}

void AppendRoles(const ClusterSpec& spec, std::vector<Manifest>* out) {
  const RolePod learner = LearnerPod(spec);
  out->push_back(RenderService(
      spec, learner, true,
      absl::StrCat("Headless: every learner rank R has the stable name ",
                   ObjectName(spec, "learner"), "-R.",
                   ObjectName(spec, "learner"),
                   ", resolvable before it is ready.")));
  out->push_back(RenderWorkload(
      spec, learner, true,
      "Learner ranks 0..N-1 (RANK = pod index), started together; rank 0 "
      "holds the rendezvous."));
  const RolePod inference = InferencePod(spec);
  out->push_back(RenderService(
      spec, inference, true,
      absl::StrCat("Headless: every inference server I has the stable name ",
                   ObjectName(spec, "inference"), "-I.",
                   ObjectName(spec, "inference"),
                   "; each rollout worker lists them all.")));
  out->push_back(RenderWorkload(
      spec, inference, true,
      "Inference servers 0..N-1: no state of their own (the weights come "
      "from the learner); a StatefulSet for their stable names."));
  const RolePod rollout = RolloutPod(spec);
  out->push_back(RenderService(spec, rollout, true,
                               "Headless: a stable name per rollout worker."));
  out->push_back(RenderWorkload(
      spec, rollout, true,
      "A StatefulSet, not a Deployment: each rollout worker needs a stable "
      "index (its env ids and seeds are worker * env.num_envs + i), and a "
      "restarted worker keeps its index. The index is the pod's "
      "apps.kubernetes.io/pod-index label (Kubernetes >= 1.28)."));
}

}  // namespace

std::string LearnerHost(const ClusterSpec& spec, int64_t rank) {
  const std::string service = ObjectName(spec, "learner");
  return absl::StrCat(service, "-", rank, ".", service);
}

std::string InferenceHost(const ClusterSpec& spec, int64_t index) {
  const std::string service = ObjectName(spec, "inference");
  return absl::StrCat(service, "-", index, ".", service);
}

std::vector<Manifest> RenderManifests(const ClusterSpec& spec,
                                      const std::string& run_config,
                                      const SecretValues& secrets) {
  std::vector<Manifest> out = {RenderNamespace(spec),
                               RenderConfigMap(spec, run_config)};
  if (!spec.token_file.empty()) {
    out.push_back(RenderSecret(spec, secrets.token));
  }
  if (!spec.tls.cert.empty()) out.push_back(RenderTlsSecret(spec, secrets));
  out.push_back(RenderStorage(spec));
  out.push_back(RenderNetworkPolicy(spec));
  AppendRoles(spec, &out);
  return out;
}

std::string JoinManifests(const std::vector<Manifest>& manifests) {
  std::string out =
      "# Every Kubernetes object of one rl-vla3 job, rendered from its "
      "CLUSTER.yaml\n# by `rl-vla3 up CLUSTER.yaml` (docs/kubernetes.md).\n";
  for (const Manifest& m : manifests) absl::StrAppend(&out, "---\n", m.yaml);
  return out;
}

}  // namespace rlvla3::kube
