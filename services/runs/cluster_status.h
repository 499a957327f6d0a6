// File: services/runs/cluster_status.h
// -----------------------------------------------------------------------------
// `rl-vla3 status`: health, version and throughput of every role at the
// addresses a layout names, then the learner's roster (every role that sends
// heartbeats, wherever it runs; a role silent past its timeout is flagged).
//
// Example:
//   return RunStatus(LayoutFromConfig(c.cluster), net);  // 0: all SERVING
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_RUNS_CLUSTER_STATUS_H_
#define RLVLA3_SERVICES_RUNS_CLUSTER_STATUS_H_

#include "services/net/grpc_common.h"
#include "services/options/cluster_options.h"

namespace rlvla3 {

// Exit code: 0 when every role is SERVING and none is silent; else 1.
int RunStatus(const ClusterLayout& layout, const NetOptions& net);

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_RUNS_CLUSTER_STATUS_H_
