// File: services/kube/pod_template.h
// -----------------------------------------------------------------------------
// Internal to services/kube: the parts of a role's Kubernetes objects that
// every role shares. A RolePod says what differs (arguments, environment,
// ports, whether the checkpoint volume is mounted); PodTemplate() writes the
// selector and pod template of its StatefulSet or Deployment: the job's
// labels, a non-root security context, one container running `rl-vla3` with
// gRPC startup/liveness/readiness probes on the role's port (grpc.health.v1,
// open without the token), resource requests and GPU limits, and the config,
// checkpoint and token volumes.
//
// Example:
//   RolePod pod{"inference", &spec.inference, {"serve", "inference", ...}};
//   pod.ports = {{"grpc", spec.inference.port}};
//   yaml::Key(e, "spec");
//   e << YAML::BeginMap;
//   PodTemplate(e, spec, pod);
//   e << YAML::EndMap;
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_KUBE_POD_TEMPLATE_H_
#define RLVLA3_SERVICES_KUBE_POD_TEMPLATE_H_

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <string>
#include <vector>

#include "services/kube/cluster_spec.h"

namespace rlvla3::kube {

// Where the pods find their inputs.
inline constexpr char kConfigDir[] = "/etc/rl-vla3";
inline constexpr char kCheckpointDir[] = "/checkpoints";
inline constexpr char kTokenDir[] = "/var/run/rl-vla3";
inline constexpr char kTlsDir[] = "/etc/rl-vla3-tls";  // tls.crt tls.key ca.crt
// The pods' user and group (deploy/Dockerfile creates it).
inline constexpr int64_t kPodUid = 10001;

struct EnvVar {
  std::string name;
  std::string value;       // a literal value, or
  std::string field_path;  // a downward-API field (when set)
};

struct Port {
  std::string name;
  int64_t port = 0;
};

struct RolePod {
  std::string role;  // learner | inference | rollout: container, component
  const RoleSpec* r = nullptr;
  std::vector<std::string> args;  // after the `rl-vla3` command
  std::vector<EnvVar> env;
  std::vector<Port> ports;
  bool checkpoints = false;  // mounts the PVC at kCheckpointDir
};

// "NAME-SUFFIX": the name of one of the job's objects.
std::string ObjectName(const ClusterSpec& spec, const std::string& suffix);

// The labels mapping: app.kubernetes.io/name=rl-vla3, plus instance=NAME and
// component=`component` unless `component` is empty.
void Labels(YAML::Emitter& e, const ClusterSpec& spec,
            const std::string& component);

// "ports:" with `port_key` (containerPort, port) for each.
void Ports(YAML::Emitter& e, const std::vector<Port>& ports,
           const char* port_key);

// "selector:" and "template:" of a workload's spec mapping.
void PodTemplate(YAML::Emitter& e, const ClusterSpec& spec, const RolePod& pod);

}  // namespace rlvla3::kube

#endif  // RLVLA3_SERVICES_KUBE_POD_TEMPLATE_H_
