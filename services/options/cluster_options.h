// File: services/options/cluster_options.h
// -----------------------------------------------------------------------------
// The run as processes, from the config's cluster section: where each role
// listens (up --local, status, bench --placement processes) and the network
// options every client and server of the run shares (the token, TLS).
//
// Example:
//   ClusterLayout l = LayoutFromConfig(config.cluster);  // l.learner, ...
//   absl::StatusOr<NetOptions> net = NetOptionsFromConfig(config);
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_OPTIONS_CLUSTER_OPTIONS_H_
#define RLVLA3_SERVICES_OPTIONS_CLUSTER_OPTIONS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/config.h"
#include "runtime/prometheus_endpoint.h"
#include "services/net/grpc_common.h"

namespace rlvla3 {

struct ClusterLayout {
  std::string learner;  // rank 0: weights, status, roster
  std::vector<std::string> inference, rollout;
  std::vector<std::string> learner_ranks;  // every rank, rank 0 first
  int rendezvous_port = 0;                 // the ranks' TCPStore
};
ClusterLayout LayoutFromConfig(const ClusterConfig& c);

// A run's network options for its clients and servers: the shared token
// (cluster.token_file, else env RLVLA3_TOKEN), TLS from cluster.tls_* (an
// unreadable or partial set is a config error naming the key), default
// limits.
absl::StatusOr<NetOptions> NetOptionsFromConfig(const Config& c);

// NetOptionsFromConfig's errors, or a config error naming
// cluster.allow_plaintext_token when the token would cross one of
// `addresses` (listened on or called) in plaintext off loopback.
absl::Status CheckNetForAddresses(const Config& c,
                                  const std::vector<std::string>& addresses);

// A role's /metrics endpoint (metrics.prometheus_*), without labels.
PrometheusOptions PrometheusOptionsOf(const MetricsConfig& m);

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_OPTIONS_CLUSTER_OPTIONS_H_
