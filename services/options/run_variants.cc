#include "services/options/run_variants.h"

#include <algorithm>
#include <vector>

#include "envs/task_file.h"
#include "services/options/config_bridge.h"

namespace rlvla3 {

Config BenchConfig(const Config& c, double duration_s) {
  Config b = c;
  b.rl.duration_s = duration_s;
  b.rl.max_steps = 0;
  return b;
}

Config ConfigInMode(const Config& c, const std::string& mode) {
  Config m = c;
  m.run.mode = mode;
  return m;
}

EnvStageProcesses EnvStageProcessesOf(const Config& c, const std::string& dir) {
  EnvStageProcesses p;
  p.config = c;
  p.config.run.out_dir = dir;
  const EnvWorkerShare share = EnvWorkerShareOf(c);
  p.workers = share.workers;
  p.envs_per_worker = share.envs_per_worker;
  p.processes =
      static_cast<int>(std::max<int64_t>(1, c.cluster.rollout_workers));
  return p;
}

absl::StatusOr<ProcessesRunSetup> ProcessesRunSetupOf(const Config& c,
                                                      const std::string& mode,
                                                      const std::string& dir) {
  ProcessesRunSetup p;
  Config& m = p.config;
  m = c;
  m.run.mode = mode;
  m.run.out_dir = dir;
  m.run.name = "up";
  // Every bench run starts fresh (no resume from the previous one) and
  // writes no checkpoint while it is measured.
  m.rl.resume = "never";
  m.rl.checkpoint_every_s = 0;
  m.rl.checkpoint_every = 0;
  absl::StatusOr<NetOptions> net = NetOptionsFromConfig(m);
  if (!net.ok()) return net.status();
  p.net = *net;
  p.layout = LayoutFromConfig(m.cluster);
  return p;
}

std::vector<int> EnvStageImageIntervals(const Config& c) {
  std::vector<int> out = {1};
  const int run =
      static_cast<int>(std::min<int64_t>(c.rl.execute_steps, c.policy.chunk));
  if (run > 1) out.push_back(run);
  return out;
}

absl::StatusOr<EnvPoolOptions> EnvPoolOptionsOfRun(const Config& c) {
  absl::StatusOr<std::vector<TaskSpec>> tasks =
      ResolveTaskList(c.env.tasks, "env.tasks");
  if (!tasks.ok()) return tasks.status();
  return EnvPoolOptionsFromConfig(c, *tasks);
}

}  // namespace rlvla3
