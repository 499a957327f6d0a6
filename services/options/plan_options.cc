#include "services/options/plan_options.h"

#include <algorithm>

#include "envs/sim_env.h"
#include "policies/tiny_vla.h"
#include "services/options/config_bridge.h"

namespace rlvla3 {

RunShape PlanRunShape(const Config& c) {
  RunShape r;
  r.num_envs = static_cast<int>(c.env.num_envs);
  r.env_workers = static_cast<int>(
      std::min<int64_t>(c.threads.env_workers, c.env.num_envs));
  r.rollout_len = static_cast<int>(c.rl.rollout_len);
  r.rollouts_per_step = static_cast<int>(c.rl.rollouts_per_step);
  r.execute_steps = static_cast<int>(c.rl.execute_steps);
  r.max_batch = static_cast<int>(c.batcher.max_batch);
  r.max_wait_s = c.batcher.max_wait_ms / 1e3;
  r.max_policy_lag = static_cast<int>(c.rl.max_policy_lag);
  r.micro_batch = static_cast<int>(c.rl.micro_batch);
  r.inference_threads = r.learner_threads =
      static_cast<int>(std::max<int64_t>(1, c.threads.torch_intra_op));
  r.learner_nice = static_cast<int>(c.threads.learner_nice);
  r.inference_bf16 = c.inference.precision == "bf16";
  r.learner_bf16 = c.learner.precision == "bf16";
  r.policy = PolicyShapeOf(TinyVLAOptionsFromConfig(c, /*vocab=*/0));
  PolicyShape& p = r.policy;
  p.cameras = static_cast<int64_t>(EnvCameras(c.env).size());
  p.image_height = c.env.image_height;
  p.image_width = c.env.image_width;
  r.observation_bytes =
      static_cast<double>(p.cameras * p.image_height * p.image_width * 3) +
      4.0 * kProprioDim + 8.0 * static_cast<double>(p.text_len);
  return r;
}

PolicyShape PolicyShapeOf(const TinyVLAOptions& o) {
  PolicyShape p;
  p.d_model = o.d_model();
  p.layers = o.layers();
  p.heads = o.heads();
  p.mlp_ratio = o.mlp_ratio();
  p.grid = o.grid();
  p.text_len = o.max_text_len();
  p.patch = o.patch();
  p.stem_channels = o.stem_channels();
  p.chunk = o.chunk();
  p.action_dim = o.action_dim();
  p.bins = o.bins();
  return p;
}

Split ConfigSplit(const Config& c, bool processes) {
  const RunShape r = PlanRunShape(c);
  Split s;
  s.envs_per_worker = r.num_envs;
  s.env_workers = r.env_workers;
  const int actors =
      static_cast<int>(std::max<int64_t>(1, c.threads.inference_actors));
  if (!processes) {
    s.inference_servers = actors;
    s.in_process = true;
    return s;
  }
  s.rollout_workers = static_cast<int>(c.cluster.rollout_workers);
  s.inference_servers = static_cast<int>(c.cluster.inference_servers) * actors;
  s.learner_ranks = static_cast<int>(c.cluster.learner_ranks);
  return s;
}

}  // namespace rlvla3
