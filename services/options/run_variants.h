// File: services/options/run_variants.h
// -----------------------------------------------------------------------------
// The configs a verb derives from the user's before it turns one into
// options: the bench's (a fixed wall time, no step limit), the same run in
// the other mode, the run's env pool alone. Kept here, with the rest of the
// config's readers, so that services/runs/ reads no config key.
//
// Example:
//   const Config bench = BenchConfig(config, /*duration_s=*/30);
//   for (const char* mode : {"sync", "async"}) Run(ConfigInMode(bench, mode));
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_OPTIONS_RUN_VARIANTS_H_
#define RLVLA3_SERVICES_OPTIONS_RUN_VARIANTS_H_

#include <string>

#include "absl/status/statusor.h"
#include "envs/env_pool.h"
#include "runtime/config.h"
#include "services/net/grpc_common.h"
#include "services/options/cluster_options.h"

namespace rlvla3 {

// `c` for `duration_s` seconds of wall time and no optimizer-step limit.
Config BenchConfig(const Config& c, double duration_s);

// `c` with run.mode = `mode` (sync | async).
Config ConfigInMode(const Config& c, const std::string& mode);

// The run's env pool: env.tasks resolved, the env.* and threads.* keys.
absl::StatusOr<EnvPoolOptions> EnvPoolOptionsOfRun(const Config& c);

// How often the env stage draws images: every step (1), and, where a
// decision executes more than one chunk step (rl.execute_steps, at most
// policy.chunk), as the run draws them. `bench --env-workers` measures each.
std::vector<int> EnvStageImageIntervals(const Config& c);

// The bench's env stage as processes: each of cluster.rollout_workers
// processes runs the env stage alone with the run's workers and envs; the
// config they read is written under `dir`.
struct EnvStageProcesses {
  Config config;  // run.out_dir = dir
  int processes = 1;
  int64_t workers = 1, envs_per_worker = 1;
};
EnvStageProcesses EnvStageProcessesOf(const Config& c, const std::string& dir);

// One mode of the run as processes (`up --local`), measured: a fresh run
// named "up" under `dir` that neither resumes nor checkpoints; its layout
// and the network options to reach its roles.
struct ProcessesRunSetup {
  Config config;
  ClusterLayout layout;
  NetOptions net;
};
absl::StatusOr<ProcessesRunSetup> ProcessesRunSetupOf(const Config& c,
                                                      const std::string& mode,
                                                      const std::string& dir);

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_OPTIONS_RUN_VARIANTS_H_
