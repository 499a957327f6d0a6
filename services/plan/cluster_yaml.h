// File: services/plan/cluster_yaml.h
// -----------------------------------------------------------------------------
// The CLUSTER.yaml of a planned split (docs/kubernetes.md's format, which
// `rl-vla3 up` reads as is): each role's replicas, GPUs, CPU and memory
// requests from the memory model, and the run-config overrides that give
// each pod its share (env.num_envs and threads.env_workers per rollout pod;
// devices, precisions and the NCCL backend on GPUs).
//
// Example:
//   ClusterYamlOptions o;  o.name = "lift";  o.image = "...:0.3.0";
//   o.config = "../configs/libero_demo.yaml";
//   std::string yaml = ClusterYaml(forecast, inputs, o);
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_PLAN_CLUSTER_YAML_H_
#define RLVLA3_SERVICES_PLAN_CLUSTER_YAML_H_

#include <string>

#include "services/plan/cluster_plan.h"

namespace rlvla3 {

struct ClusterYamlOptions {
  std::string name = "rl-vla3";
  std::string ns = "rl-vla3";
  std::string image;
  std::string config;  // the run config, relative to the YAML's folder
};

std::string ClusterYaml(const SplitForecast& f, const PlanInputs& in,
                        const ClusterYamlOptions& o);

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_PLAN_CLUSTER_YAML_H_
