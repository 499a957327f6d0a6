#include "services/options/run_settings.h"

#include <algorithm>
#include <string>

#include "rlvla3/v1/services.pb.h"
#include "services/net/taken_bins.h"

namespace rlvla3 {

int GlobalEnvs(const LocalEngineOptions& o, const RunLayout& layout) {
  return layout.workers * o.rollout.pool.num_envs;
}

void FillRunSettings(const LocalEngineOptions& o, const RunLayout& layout,
                     v1::RunSettings* out) {
  v1::RunSettings& r = *out;
  const SegmentShape& sh = o.segment_shape;
  const RolloutWorkerOptions& ro = o.rollout;
  r.Clear();
  r.set_image_height(static_cast<uint32_t>(sh.height));
  r.set_image_width(static_cast<uint32_t>(sh.width));
  for (const std::string& camera : sh.cameras) r.add_cameras(camera);
  r.set_proprio_dim(static_cast<uint32_t>(sh.proprio_dim));
  r.set_chunk(static_cast<uint32_t>(sh.chunk));
  r.set_action_dim(static_cast<uint32_t>(sh.action_dim));
  // TinyVLA (undeclared): 256 uint8 bins; a declared Gaussian head: 0.
  int64_t bins = o.policy_interface_json.empty() ? 256 : 0;
  for (int64_t b : o.action_bins) bins = std::max(bins, b);
  r.set_action_bins(static_cast<uint32_t>(bins));  // 0: a Gaussian head
  r.set_action_tokens_dtype(TakenDtype(sh.taken_bytes));
  r.set_policy_interface_json(o.policy_interface_json);
  r.set_execute_steps(static_cast<uint32_t>(ro.execute_steps));
  r.set_max_segment_decisions(static_cast<uint32_t>(sh.capacity));
  r.set_num_envs(static_cast<uint32_t>(GlobalEnvs(o, layout)));
  r.set_envs_per_worker(static_cast<uint32_t>(ro.pool.num_envs));
  r.set_rollout_workers(static_cast<uint32_t>(layout.workers));
  for (const std::string& n : o.task_names) r.add_task_names(n);
  for (const std::string& i : o.instructions) r.add_instructions(i);
  r.set_algorithm(o.algorithm);
  r.set_grpo_group_size(static_cast<uint32_t>(ro.group_size));
  r.set_mode(o.sync ? "sync" : "async");
  r.set_max_policy_lag(static_cast<uint32_t>(ro.max_policy_lag));
  r.set_global_batch(
      static_cast<uint64_t>(o.learner.core.global_units * layout.workers));
  r.set_units_per_env_per_version(static_cast<uint64_t>(ro.quota));
  r.set_learner_ranks(static_cast<uint32_t>(layout.learner_ranks));
  r.set_route_block(static_cast<uint32_t>(layout.route_block));
}

SegmentLimits SegmentLimitsOf(const LocalEngineOptions& o,
                              const RunLayout& layout) {
  SegmentLimits l;
  l.num_envs = GlobalEnvs(o, layout);
  l.num_tasks = static_cast<int>(o.instructions.size());
  l.execute_steps = o.rollout.execute_steps;
  l.grpo = o.rollout.grpo;
  l.bins = o.action_bins;
  return l;
}

}  // namespace rlvla3
