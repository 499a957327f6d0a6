#include "services/kube/pod_template.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "services/kube/yaml_writer.h"

namespace rlvla3::kube {
namespace {

using yaml::Bool;
using yaml::Int;
using yaml::Key;
using yaml::Str;

void Env(YAML::Emitter& e, const std::vector<EnvVar>& env) {
  if (env.empty()) return;
  Key(e, "env");
  e << YAML::BeginSeq;
  for (const EnvVar& v : env) {
    e << YAML::BeginMap;
    Str(e, "name", v.name);
    if (v.field_path.empty()) {
      Str(e, "value", v.value);
    } else {
      Key(e, "valueFrom");
      e << YAML::BeginMap;
      Key(e, "fieldRef");
      e << YAML::BeginMap;
      Str(e, "fieldPath", v.field_path);
      e << YAML::EndMap << YAML::EndMap;
    }
    e << YAML::EndMap;
  }
  e << YAML::EndSeq;
}

void Resources(YAML::Emitter& e, const RoleSpec& r) {
  const bool requests = !r.cpu.empty() || !r.memory.empty();
  if (!requests && r.gpus == 0) return;
  Key(e, "resources");
  e << YAML::BeginMap;
  if (requests) {
    Key(e, "requests");
    e << YAML::BeginMap;
    if (!r.cpu.empty()) Str(e, "cpu", r.cpu);
    if (!r.memory.empty()) Str(e, "memory", r.memory);
    e << YAML::EndMap;
  }
  if (r.gpus > 0) {
    Key(e, "limits");
    e << YAML::BeginMap;
    Str(e, "nvidia.com/gpu", absl::StrCat(r.gpus));
    e << YAML::EndMap;
  }
  e << YAML::EndMap;
}

// grpc.health.v1 probes; with TLS a TCP connect (the kubelet's gRPC probe
// speaks plaintext only, and the roles require a client certificate). The
// startup probe gives a role 5 minutes to come up (LibTorch, the first
// policy) before liveness may restart it.
void Probes(YAML::Emitter& e, int64_t port, bool tls) {
  struct Probe {
    const char* key;
    int64_t delay_s, period_s, failures;
  };
  for (const Probe& p :
       {Probe{"startupProbe", 2, 5, 60}, Probe{"livenessProbe", 10, 10, 3},
        Probe{"readinessProbe", 5, 5, 3}}) {
    Key(e, p.key);
    e << YAML::BeginMap;
    Key(e, tls ? "tcpSocket" : "grpc");
    e << YAML::BeginMap;
    Int(e, "port", port);
    e << YAML::EndMap;
    Int(e, "initialDelaySeconds", p.delay_s);
    Int(e, "periodSeconds", p.period_s);
    Int(e, "timeoutSeconds", 5);
    Int(e, "failureThreshold", p.failures);
    e << YAML::EndMap;
  }
}

void Mount(YAML::Emitter& e, const char* name, const std::string& path,
           bool read_only) {
  e << YAML::BeginMap;
  Str(e, "name", name);
  Str(e, "mountPath", path);
  if (read_only) Bool(e, "readOnly", true);
  e << YAML::EndMap;
}

void Container(YAML::Emitter& e, const ClusterSpec& spec, const RolePod& pod) {
  e << YAML::BeginMap;
  Str(e, "name", pod.role);
  Str(e, "image", spec.image);
  Str(e, "imagePullPolicy", "IfNotPresent");
  Key(e, "command");
  e << YAML::Flow << YAML::BeginSeq << "rl-vla3" << YAML::EndSeq;
  Key(e, "args");
  e << YAML::BeginSeq;
  for (const std::string& a : pod.args) yaml::Scalar(e, a);
  e << YAML::EndSeq;
  Ports(e, pod.ports, "containerPort");
  Env(e, pod.env);
  Resources(e, *pod.r);
  Probes(e, pod.r->port, !spec.tls.cert.empty());
  Key(e, "volumeMounts");
  e << YAML::BeginSeq;
  Mount(e, "config", kConfigDir, true);
  if (pod.checkpoints) Mount(e, "checkpoints", kCheckpointDir, false);
  if (!spec.token_file.empty()) Mount(e, "token", kTokenDir, true);
  if (!spec.tls.cert.empty()) Mount(e, "tls", kTlsDir, true);
  e << YAML::EndSeq << YAML::EndMap;
}

// One volume: {name, SOURCE: {KEY: VALUE[, defaultMode]}}.
void Volume(YAML::Emitter& e, const char* name, const char* source,
            const char* key, const std::string& value, int64_t mode = 0) {
  e << YAML::BeginMap;
  Str(e, "name", name);
  Key(e, source);
  e << YAML::BeginMap;
  Str(e, key, value);
  if (mode != 0) {
    Int(e, "defaultMode", mode);
    e << YAML::Comment(absl::StrFormat("0%o", mode));
  }
  e << YAML::EndMap << YAML::EndMap;
}

void Volumes(YAML::Emitter& e, const ClusterSpec& spec, const RolePod& pod) {
  Key(e, "volumes");
  e << YAML::BeginSeq;
  Volume(e, "config", "configMap", "name", ObjectName(spec, "config"));
  if (pod.checkpoints) {
    Volume(e, "checkpoints", "persistentVolumeClaim", "claimName",
           ObjectName(spec, "checkpoints"));
  }
  if (!spec.token_file.empty()) {
    // 0440: readable by the pod's user and group (fsGroup), nobody else.
    Volume(e, "token", "secret", "secretName", ObjectName(spec, "token"), 0440);
  }
  if (!spec.tls.cert.empty()) {
    Volume(e, "tls", "secret", "secretName", ObjectName(spec, "tls"), 0440);
  }
  e << YAML::EndSeq;
}

void PodSpec(YAML::Emitter& e, const ClusterSpec& spec, const RolePod& pod) {
  e << YAML::BeginMap;
  Bool(e, "enableServiceLinks", false);
  Key(e, "securityContext");
  e << YAML::BeginMap;
  Bool(e, "runAsNonRoot", true);
  Int(e, "runAsUser", kPodUid);
  Int(e, "runAsGroup", kPodUid);
  Int(e, "fsGroup", kPodUid);
  e << YAML::EndMap;
  Key(e, "containers");
  e << YAML::BeginSeq;
  Container(e, spec, pod);
  e << YAML::EndSeq;
  Volumes(e, spec, pod);
  e << YAML::EndMap;
}

}  // namespace

std::string ObjectName(const ClusterSpec& spec, const std::string& suffix) {
  return absl::StrCat(spec.name, "-", suffix);
}

void Labels(YAML::Emitter& e, const ClusterSpec& spec,
            const std::string& component) {
  e << YAML::BeginMap;
  Str(e, "app.kubernetes.io/name", "rl-vla3");
  if (!component.empty()) {
    Str(e, "app.kubernetes.io/instance", spec.name);
    Str(e, "app.kubernetes.io/component", component);
  }
  e << YAML::EndMap;
}

void Ports(YAML::Emitter& e, const std::vector<Port>& ports,
           const char* port_key) {
  Key(e, "ports");
  e << YAML::BeginSeq;
  for (const Port& p : ports) {
    e << YAML::BeginMap;
    Str(e, "name", p.name);
    Int(e, port_key, p.port);
    e << YAML::EndMap;
  }
  e << YAML::EndSeq;
}

void PodTemplate(YAML::Emitter& e, const ClusterSpec& spec,
                 const RolePod& pod) {
  Key(e, "selector");
  e << YAML::BeginMap;
  Key(e, "matchLabels");
  Labels(e, spec, pod.role);
  e << YAML::EndMap;
  Key(e, "template");
  e << YAML::BeginMap;
  Key(e, "metadata");
  e << YAML::BeginMap;
  Key(e, "labels");
  Labels(e, spec, pod.role);
  if (spec.metrics_port != 0) {
    // Prometheus' pod discovery (kubernetes_sd_configs, role: pod) keeps
    // the pods annotated so.
    Key(e, "annotations");
    e << YAML::BeginMap;
    Str(e, "prometheus.io/scrape", "true");
    Str(e, "prometheus.io/port", absl::StrCat(spec.metrics_port));
    Str(e, "prometheus.io/path", "/metrics");
    e << YAML::EndMap;
  }
  e << YAML::EndMap;
  Key(e, "spec");
  PodSpec(e, spec, pod);
  e << YAML::EndMap;
}

}  // namespace rlvla3::kube
