// File: services/runs/health_wait.h
// -----------------------------------------------------------------------------
// WaitServing: the one wait for roles to come up. Polls the gRPC health of
// every address until all answer SERVING; stops early when `alive` reports
// a problem (a child process that ended) or a stop signal arrives, and with
// DeadlineExceeded ("WHAT not healthy within N s; see LOG") after timeout_s.
//
// Example:
//   absl::Status s = WaitServing({address}, net, 120, "inference 0 at :50051",
//                                log_path, [&] { return StillRunning(m); });
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_RUNS_HEALTH_WAIT_H_
#define RLVLA3_SERVICES_RUNS_HEALTH_WAIT_H_

#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "services/net/grpc_common.h"

namespace rlvla3 {

absl::Status WaitServing(const std::vector<std::string>& addresses,
                         const NetOptions& net, double timeout_s,
                         absl::string_view what, absl::string_view log_hint,
                         absl::FunctionRef<absl::Status()> alive);

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_RUNS_HEALTH_WAIT_H_
