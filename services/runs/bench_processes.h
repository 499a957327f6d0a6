// File: services/runs/bench_processes.h
// -----------------------------------------------------------------------------
// One mode of `rl-vla3 bench --placement processes`: the same config run as
// separate processes through `rl-vla3 up --local` (1 learner,
// cluster.inference_servers inference servers, cluster.rollout_workers
// rollout workers on loopback), measured from the roles' own GetStatus over a
// window that starts once every role is healthy and has warmed up. The bench
// process itself only waits, so it takes no CPU from the roles.
//
// Example:
//   absl::StatusOr<ProcessRun> r =
//       RunProcessesOnce(config, "async", "/proc/self/exe", dir, 30);
//   r->env_frames_per_s ...
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_RUNS_BENCH_PROCESSES_H_
#define RLVLA3_SERVICES_RUNS_BENCH_PROCESSES_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "runtime/config.h"

namespace rlvla3 {

struct ProcessRun {
  bool ran = false;
  int processes = 0;
  double window_s = 0;  // the measured window
  double env_frames_per_s = 0;
  double trained_samples_per_s = 0;
  uint64_t optimizer_steps = 0;  // taken in the window
  uint64_t policy_version = 0;   // the learner's at the end
};

// The env stage alone as the processes run it: cluster.rollout_workers
// children of `binary bench --env-workers` at once, each with the config's
// env workers and envs (env_stage_bench.h); their frames/s summed.
struct EnvProcessesRun {
  int processes = 0;
  double frames_per_s = 0;
};
absl::StatusOr<EnvProcessesRun> RunEnvStageAsProcesses(
    const Config& config, const std::string& binary, const std::string& dir,
    double seconds);

// Runs `config` in `mode` ("sync" or "async") as processes for `duration_s`
// of measurement; `binary` is rl-vla3, `dir` gets the config and logs.
absl::StatusOr<ProcessRun> RunProcessesOnce(const Config& config,
                                            const std::string& mode,
                                            const std::string& binary,
                                            const std::string& dir,
                                            double duration_s);

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_RUNS_BENCH_PROCESSES_H_
