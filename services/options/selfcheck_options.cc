#include "services/options/selfcheck_options.h"

#include <algorithm>

namespace rlvla3 {

SelfCheckOptions SelfCheckOptionsFromConfig(const Config& c) {
  SelfCheckOptions o;
  const SelfCheckConfig& sc = c.selfcheck;
  o.num_envs = sc.num_envs;
  o.steps_per_env = sc.steps_per_env;
  o.obs_dim = sc.obs_dim;
  o.action_dim = sc.action_dim;
  o.hidden = sc.hidden;
  o.env_step_ms = sc.env_step_ms;
  o.requests = c.queues.request.ToOptions();
  o.requests.max_producers = std::max<size_t>(o.requests.max_producers,
                                              static_cast<size_t>(sc.num_envs));
  o.batcher = c.batcher.ToOptions();
  o.inference_actors = c.threads.inference_actors;
  o.tick_s = c.metrics.interval_s;
  o.seed = static_cast<uint64_t>(c.run.seed);
  return o;
}

}  // namespace rlvla3
