// File: services/runs/serve.h
// -----------------------------------------------------------------------------
// `rl-vla3 serve learner|inference|rollout`: one role as its own process,
// its channels over gRPC (services/net). Each process builds its role's
// options from the same config as `train` does, so shapes, the instruction
// table and the policy kind agree everywhere; the processes find each other
// by the addresses on the command line.
//
//   serve learner   --listen H:P     (a rank of a data-parallel learner
//                                     when WORLD_SIZE > 1: MASTER_ADDR,
//                                     MASTER_PORT, RANK as torchrun sets)
//   serve inference --listen H:P --learner H:P   (rank 0)
//   serve rollout   --listen H:P --learner H:P[,H:P...] (every rank)
//                   --inference H:P[,H:P...]
//                   --worker W          (envs W*num_envs ... +num_envs-1)
//
// Each prints "<role>: serving on HOST:PORT" once ready (PORT resolved when
// 0 was asked for), runs until SIGINT/SIGTERM, --duration, rl.max_steps
// (learner) or a Stop RPC (rollout), then stops its role and exits 0; 1 on a
// role's error.
//
// Example:
//   ServeFlags f{.role = "learner", .listen = "127.0.0.1:50051"};
//   return RunServe(config, f);
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_RUNS_SERVE_H_
#define RLVLA3_SERVICES_RUNS_SERVE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/config.h"
#include "services/net/grpc_common.h"

namespace rlvla3 {

struct ServeFlags {
  std::string role;                        // learner | inference | rollout
  std::string listen;                      // HOST:PORT (default 127.0.0.1:0)
  std::string learner;                     // inference, rollout: rank 0
  std::vector<std::string> learner_ranks;  // rollout: every learner rank
  std::vector<std::string> inference;      // rollout
  int worker = 0;                          // rollout
  double duration_s = 0;                   // 0: until stopped
};

// The process exit code.
int RunServe(const Config& c, const ServeFlags& flags);

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_RUNS_SERVE_H_
