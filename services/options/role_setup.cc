#include "services/options/role_setup.h"

#include <torch/torch.h>

#include <algorithm>
#include <cstdint>
#include <utility>

#include "absl/strings/str_cat.h"
#include "policies/device.h"
#include "services/options/cluster_options.h"
#include "services/options/engine_config.h"
#include "services/options/run_settings.h"

namespace rlvla3 {

absl::StatusOr<RoleSetup> RoleSetupFromConfig(const Config& c) {
  RoleSetup s;
  torch::manual_seed(static_cast<uint64_t>(c.run.seed));
  absl::StatusOr<EngineParts> parts = BuildEngineParts(c);
  if (!parts.ok()) return parts.status();
  s.parts = *std::move(parts);
  absl::StatusOr<LocalEngineOptions> o =
      LocalEngineOptionsFromConfig(c, s.parts);
  if (!o.ok()) return o.status();
  s.options = *std::move(o);
  absl::StatusOr<NetOptions> net = NetOptionsFromConfig(c);
  if (!net.ok()) return net.status();
  s.net = *net;
  // Message limits from what crosses: a whole segment, a weight chunk.
  const SegmentShape& sh = s.options.segment_shape;
  const int64_t segment_bytes =
      int64_t{sh.capacity + 1} * sh.width * sh.height * 3 * sh.num_cameras() +
      (1 << 20);
  s.net.max_message_bytes = std::max<int64_t>(64 << 20, 2 * segment_bytes);
  s.net.max_concurrent_streams =
      static_cast<int>(c.cluster.max_streams_per_connection);
  const int64_t observation_bytes =
      int64_t{sh.width} * sh.height * 3 * sh.num_cameras() +
      4 * sh.proprio_dim + (64 << 10);
  const int64_t given = c.cluster.max_message_mb << 20;
  s.limits.learner_receive_bytes = given > 0 ? given : s.net.max_message_bytes;
  s.limits.inference_receive_bytes =
      given > 0 ? given : std::max<int64_t>(1 << 20, 4 * observation_bytes);
  s.limits.rollout_receive_bytes = given > 0 ? given : (1 << 20);
  s.limits.max_queued_replies = static_cast<int>(c.cluster.max_queued_replies);
  s.limits.max_roster_roles = static_cast<int>(c.cluster.max_roster_roles);
  s.shape = WireShapeOf(sh);
  s.workers = static_cast<int>(c.cluster.rollout_workers);
  s.global_envs = GlobalEnvs(s.options, RunLayout{s.workers});
  // Envs whose segments go to one learner rank together: a GRPO group.
  s.route_block =
      c.rl.algorithm == "grpo" ? static_cast<int>(c.rl.grpo_group_size) : 1;
  s.checkpoint_dir = CheckpointDirOf(c);
  s.timings.heartbeat_s = c.cluster.heartbeat_s;
  s.timings.role_timeout_s = c.cluster.role_timeout_s;
  s.timings.metrics_interval_s = c.metrics.interval_s;
  s.timings.learner_backend = c.cluster.learner_backend;
  s.timings.collective_timeout_s = c.cluster.collective_timeout_s;
  s.prometheus = PrometheusOptionsOf(c.metrics);
  return s;
}

std::string CheckpointDirOf(const Config& c) {
  return absl::StrCat(c.run.out_dir, "/", c.run.name, "/checkpoints");
}

absl::Status CheckRanksGetEqualShares(const RoleSetup& s, size_t ranks) {
  const int block = s.route_block;
  const int global_envs = s.global_envs;
  if (ranks <= 1) return absl::OkStatus();
  if (global_envs % block != 0 ||
      (global_envs / block) % static_cast<int>(ranks) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(global_envs,
                     " envs (cluster.rollout_workers x env.num_envs) in "
                     "blocks of ",
                     block,
                     " (rl.grpo_group_size for GRPO, else 1) do not "
                     "split evenly over ",
                     ranks, " learner ranks"));
  }
  return absl::OkStatus();
}

at::Device RankDevice(const at::Device& configured, int local_rank, int gpus) {
  if (!configured.is_cuda() || configured.has_index() || gpus <= 0)
    return configured;
  return at::Device(at::kCUDA,
                    static_cast<c10::DeviceIndex>(local_rank % gpus));
}

absl::StatusOr<LearnerRoleOptions> LearnerProcessOptions(
    const RoleSetup& s, GradientReducer* reducer) {
  LearnerRoleOptions lo = s.options.learner;
  const int world = reducer->world_size();
  const int64_t global = lo.core.global_units * s.workers;
  if (global % world != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "learner: the global batch (", global,
        " units: rl.rollouts_per_step x env.num_envs x rl.rollout_len, or "
        "episodes for GRPO, x cluster.rollout_workers) does not split "
        "evenly over ",
        world, " ranks"));
  }
  if (absl::Status st = CheckRanksGetEqualShares(s, static_cast<size_t>(world));
      !st.ok()) {
    return st;
  }
  lo.core.global_units = global / world;
  lo.core.device =
      RankDevice(lo.core.device, reducer->local_rank(), CudaDeviceCount());
  // Weights leave over the wire: snapshots stay on the learner's device.
  lo.core.publish_device = lo.core.device;
  lo.whole_batch = s.options.sync;  // sync: train once the batch is complete
  lo.reducer = reducer;
  lo.checkpoints.dir = s.checkpoint_dir;
  return lo;
}

}  // namespace rlvla3
