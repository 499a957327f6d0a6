#include "services/options/engine_config.h"

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "envs/task.h"
#include "envs/task_file.h"
#include "policies/action_head.h"
#include "policies/checkpoint.h"
#include "policies/device.h"
#include "policies/instruction_encoder.h"
#include "policies/tiny_vla_policy.h"
#include "policies/torchscript_policy.h"
#include "services/options/checkpoint_fit.h"
#include "services/options/config_bridge.h"
#include "services/options/interface_fit.h"

namespace rlvla3 {

LearnerOptions LearnerOptionsFromConfig(const RlConfig& rl) {
  LearnerOptions lo;
  lo.algorithm = rl.algorithm;
  lo.loss.clip_eps = rl.clip_eps;
  lo.loss.clip_eps_high = rl.clip_eps_high;
  lo.dynamic_sampling = rl.dynamic_sampling;
  lo.min_informative_groups = static_cast<int>(rl.min_informative_groups);
  lo.refill_max_rounds = static_cast<int>(rl.refill_max_rounds);
  lo.ref_kl_coef = rl.ref_kl_coef;
  lo.per_step_ratio = rl.ratio == "step";
  lo.loss.is_cap = rl.is_cap;
  lo.loss.value_coef = rl.value_coef;
  lo.loss.entropy_coef = rl.entropy_coef;
  lo.loss.negative_advantage_weight = rl.negative_advantage_weight;
  lo.gamma = rl.gamma;
  lo.gae_lambda = rl.gae_lambda;
  lo.micro_batch = static_cast<int>(rl.micro_batch);
  lo.lr = rl.lr;
  lo.weight_decay = rl.weight_decay;
  lo.max_grad_norm = rl.max_grad_norm;
  lo.value_lr = rl.value_lr;
  lo.action_scale_lr = rl.action_scale_lr;
  lo.normalize_advantages = rl.normalize_advantages;
  lo.critic_warmup_steps = rl.critic_warmup_steps;
  lo.target_kl = rl.target_kl;
  lo.kl_stop = rl.kl_stop;
  lo.train_decisions = rl.train_decisions;
  lo.max_train_decisions = static_cast<int>(rl.max_train_decisions);
  lo.grpo_std_floor = rl.grpo_std_floor;
  lo.lr_min = rl.lr_min;
  lo.lr_max = rl.lr_max;
  lo.lr_adapt_factor = rl.lr_adapt_factor;
  lo.ppo_epochs = static_cast<int>(rl.ppo_epochs);
  lo.minibatches = static_cast<int>(rl.minibatches);
  return lo;
}

absl::Status CheckRoleDevices(const Config& c, bool inference, bool learner) {
  const std::pair<const char*, const std::string*> keys[] = {
      {inference ? "inference.device" : nullptr, &c.inference.device},
      {learner ? "learner.device" : nullptr, &c.learner.device}};
  for (const auto& [key, value] : keys) {
    if (key == nullptr) continue;
    if (absl::StatusOr<at::Device> d = ParseDevice(*value); !d.ok()) {
      return ConfigError{
          c.OriginOf(key), key, *value,
          absl::StrCat("a device this machine has: ", d.status().message())}
          .ToStatus();
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<EngineParts> BuildEngineParts(const Config& c) {
  EngineParts p;
  if (!c.rl.init_checkpoint.empty()) {
    absl::StatusOr<PolicyCheckpoint> ck =
        LoadPolicyCheckpoint(c.rl.init_checkpoint);
    if (!ck.ok()) return ck.status();
    p.policy = ck->policy;
    p.tokenizer = ck->tokenizer;
    p.version = ck->version;
    spdlog::info("train: starting from {} (policy version {})",
                 c.rl.init_checkpoint, p.version);
  } else {
    absl::StatusOr<std::vector<TaskSpec>> tasks =
        ResolveTaskList(c.env.tasks, "env.tasks");
    if (!tasks.ok()) return tasks.status();
    std::vector<std::string> instructions;
    for (const TaskSpec& t : *tasks) instructions.push_back(t.instruction);
    p.tokenizer = TextTokenizer::Build(instructions);
    if (c.policy.kind == "torchscript") {
      absl::StatusOr<std::unique_ptr<TorchScriptPolicy>> ts =
          TorchScriptPolicy::Load(c.policy.path, /*bins=*/256,
                                  c.policy.max_text_len);
      if (!ts.ok()) return ts.status();
      p.policy = std::shared_ptr<TrainablePolicy>(std::move(*ts));
      spdlog::info("train: TorchScript policy {} (chunk {})", c.policy.path,
                   p.policy->chunk());
    } else {
      torch::manual_seed(static_cast<uint64_t>(c.run.seed));
      p.policy = std::make_shared<TinyVLAPolicy>(
          TinyVLA(TinyVLAOptionsFromConfig(c, p.tokenizer.size())), 0);
    }
  }
  if (c.rl.init_action_temperature > 0) {
    if (absl::Status s =
            p.policy->SetActionTemperature(c.rl.init_action_temperature);
        !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("rl.init_action_temperature: ", s.message()));
    }
    spdlog::info("train: sampling temperature {} on every action dimension",
                 c.rl.init_action_temperature);
  }
  return p;
}

namespace {

// The run's tasks, resolved once: the specs the pool makes its envs from,
// their names as the config gives them (task files stay their paths), their
// instructions, the longest episode.
struct EngineTasks {
  std::vector<TaskSpec> specs;
  std::vector<std::string> names, instructions;
  int max_steps = 0;
};

absl::StatusOr<EngineTasks> ResolveEngineTasks(const EnvConfig& env) {
  absl::StatusOr<std::vector<TaskSpec>> tasks =
      ResolveTaskList(env.tasks, "env.tasks");
  if (!tasks.ok()) return tasks.status();
  if (tasks->empty()) return absl::InvalidArgumentError("engine: no tasks");
  EngineTasks t;
  t.specs = *std::move(tasks);
  if (env.tasks != "all") {
    for (absl::string_view n :
         absl::StrSplit(env.tasks, ',', absl::SkipEmpty())) {
      t.names.emplace_back(n);
    }
  }
  for (const TaskSpec& spec : t.specs) {
    if (env.tasks == "all") t.names.push_back(spec.name);
    t.instructions.push_back(spec.instruction);
    t.max_steps = std::max(t.max_steps, spec.max_steps);
  }
  if (env.max_episode_steps > 0)
    t.max_steps = static_cast<int>(env.max_episode_steps);
  return t;
}

// Every MuJoCo task's scene has the cameras env.cameras names (a config
// error naming the key, the task and the cameras its scene has).
absl::Status CheckSceneCameras(const Config& c,
                               const std::vector<TaskSpec>& specs) {
  const EnvOptions env = EnvOptionsFromConfig(c);
  for (const TaskSpec& spec : specs) {
    if (spec.toy) continue;
    absl::StatusOr<std::shared_ptr<const TaskModel>> m =
        TaskModel::Create(spec, env);
    if (!m.ok()) return m.status();
    if (absl::StatusOr<std::vector<int>> ids = (*m)->CameraIds(env.cameras);
        !ids.ok()) {
      return ConfigError{c.OriginOf("env.cameras"), "env.cameras",
                         c.env.cameras,
                         absl::StrCat("cameras every task's scene has: ",
                                      ids.status().message())}
          .ToStatus();
    }
  }
  return absl::OkStatus();
}

// env.cameras are the declared cameras, in order (FitConfigToPolicy sets
// them at config load; a config built otherwise is checked here).
absl::Status CheckDeclaredCameras(const PolicyInterface& p, const Config& c) {
  const std::vector<std::string> names = DeclaredCameraNames(p);
  if (EnvCameras(c.env) == names) return absl::OkStatus();
  return ConfigError{c.OriginOf("env.cameras"), "env.cameras", c.env.cameras,
                     absl::StrCat(absl::StrJoin(names, ","),
                                  ", the cameras the policy declares, in its "
                                  "order")}
      .ToStatus();
}

// The sizes every role's options derive from, computed once.
struct EngineSizes {
  bool grpo = false;
  int num_envs = 0;
  int chunk = 0;       // the policy's action chunk
  int execute = 0;     // steps executed per decision (<= chunk)
  int lag = 0;         // max policy lag (0 in sync)
  int group_size = 1;  // GRPO group, else 1
  int64_t quota = 0;   // units per env per optimizer step
};

EngineSizes SizesOf(const Config& c, const EngineParts& parts, bool sync) {
  EngineSizes z;
  z.grpo = c.rl.algorithm == "grpo";
  z.num_envs = static_cast<int>(c.env.num_envs);
  z.chunk = parts.policy->chunk();
  z.execute = static_cast<int>(std::min<int64_t>(c.rl.execute_steps, z.chunk));
  if (c.rl.execute_steps > z.chunk) {
    spdlog::warn(
        "engine: rl.execute_steps {} exceeds the policy's chunk {}; executing "
        "{}",
        c.rl.execute_steps, z.chunk, z.chunk);
  }
  z.lag = sync ? 0 : static_cast<int>(c.rl.max_policy_lag);
  z.group_size = z.grpo ? static_cast<int>(c.rl.grpo_group_size) : 1;
  z.quota = c.rl.rollouts_per_step * (z.grpo ? 1 : c.rl.rollout_len);
  return z;
}

RolloutWorkerOptions RolloutOptionsOf(const Config& c, const EngineSizes& z,
                                      const EngineTasks& t,
                                      const EngineParts& parts) {
  RolloutWorkerOptions r;
  r.pool = EnvPoolOptionsFromConfig(c, t.specs);
  r.grpo = z.grpo;
  r.chunk = z.chunk;
  r.execute_steps = z.execute;
  r.group_size = z.group_size;
  r.quota = z.quota;
  r.max_policy_lag = z.lag;
  r.base_version = parts.version;
  r.seed = static_cast<uint64_t>(c.run.seed);
  r.run_id = r.seed;
  r.success_window = c.rl.success_window;
  r.max_episode_steps = t.max_steps;
  r.init_first = static_cast<int>(c.rl.init_state_first);
  r.init_count = static_cast<int>(c.rl.init_states);
  r.bootstrap_truncation = c.rl.bootstrap_truncation;
  return r;
}

InferenceServerOptions InferenceOptionsOf(const Config& c, const EngineSizes& z,
                                          const at::Tensor& text,
                                          const at::Tensor& text_len) {
  InferenceServerOptions i;
  i.actors = static_cast<int>(c.threads.inference_actors);
  i.batcher = c.batcher.ToOptions();
  i.image_height = static_cast<int>(c.env.image_height);
  i.image_width = static_cast<int>(c.env.image_width);
  i.cameras = static_cast<int>(EnvCameras(c.env).size());
  i.proprio_dim = kProprioDim;
  i.chunk = z.chunk;
  i.action_dim = kActionDim;
  i.text = text;
  i.text_len = text_len;
  // Names checked when the config loaded; that this machine has them, by
  // CheckRoleDevices where the roles start.
  i.device = at::Device(c.inference.device);
  i.bf16 = c.inference.precision == "bf16";
  return i;
}

LearnerRoleOptions LearnerRoleOptionsOf(const Config& c, const EngineSizes& z,
                                        const EngineParts& parts,
                                        const InferenceServerOptions& i) {
  LearnerRoleOptions l;
  l.core = LearnerOptionsFromConfig(c.rl);
  l.core.global_units = z.num_envs * z.quota;
  l.core.max_policy_lag = z.lag;
  l.core.grpo_group_size = z.group_size;
  l.core.shuffle_seed = static_cast<uint64_t>(c.run.seed);
  l.core.device = at::Device(c.learner.device);
  l.core.bf16 = c.learner.precision == "bf16";
  l.core.publish_device = i.device;  // one process: to the local actors
  l.text = i.text;
  l.text_len = i.text_len;
  l.nice = static_cast<int>(c.threads.learner_nice);
  l.max_steps = c.rl.max_steps;
  l.starved_after = absl::Seconds(c.rl.starved_after_s);
  // Checkpoints (their folder is the caller's: the run folder) and what a
  // resumed run restores besides the weights.
  l.checkpoints.every_versions = c.rl.checkpoint_every;
  l.checkpoints.every_s = c.rl.checkpoint_every_s;
  l.checkpoints.keep = static_cast<int>(c.rl.keep_checkpoints);
  l.checkpoints.tokenizer = parts.tokenizer;
  l.checkpoints.context = RlCheckpointContext(c);
  l.checkpoints.context.interface = parts.policy->declared_interface();
  if (!c.rl.init_checkpoint.empty() &&
      std::filesystem::exists(c.rl.init_checkpoint + "/optimizer")) {
    l.resume_from = c.rl.init_checkpoint;
    l.resume_version = parts.version;
  }
  return l;
}

// The request and segment queues, the segment shape and how many segments
// the run keeps.
void SizeQueuesAndSegments(const Config& c, const EngineSizes& z, int max_steps,
                           LocalEngineOptions* o) {
  o->request_queue = QueueOptions{
      std::max<size_t>(static_cast<size_t>(z.num_envs),
                       static_cast<size_t>(c.queues.request.capacity)),
      OverflowPolicy::kBlock, static_cast<size_t>(c.threads.env_workers) + 4,
      static_cast<int>(c.queues.request.spin_before_sleep)};
  o->segment_queue = c.queues.trajectory.ToOptions();
  SegmentShape& shape = o->segment_shape;
  shape.width = static_cast<int>(c.env.image_width);
  shape.height = static_cast<int>(c.env.image_height);
  shape.cameras = EnvCameras(c.env);
  shape.chunk = z.chunk;
  shape.action_dim = kActionDim;
  shape.proprio_dim = kProprioDim;
  shape.capacity = z.grpo ? (max_steps + z.execute - 1) / z.execute + 1
                          : static_cast<int>(c.rl.rollout_len);
  // Per env: one open segment, up to (lag + 1) x rollouts_per_step in
  // flight to the learner (more with a GRPO refill: the carried batches'),
  // one being released; plus what the segment queue holds.
  const int rollouts = static_cast<int>(c.rl.rollouts_per_step);
  const int carried = z.grpo && c.rl.min_informative_groups > 0
                          ? static_cast<int>(c.rl.refill_max_rounds)
                          : 0;
  o->segment_count = z.num_envs * ((z.lag + 1 + carried) * rollouts + 2) +
                     static_cast<int>(c.queues.trajectory.capacity) + 2;
}

}  // namespace

absl::StatusOr<LocalEngineOptions> LocalEngineOptionsFromConfig(
    const Config& c, const EngineParts& parts) {
  if (c.run.mode != "sync" && c.run.mode != "async") {
    return absl::InvalidArgumentError(
        "engine: run.mode must be sync or async, got " + c.run.mode);
  }
  if (c.queues.trajectory.overflow != "block") {
    return absl::InvalidArgumentError(
        "engine: queues.trajectory.overflow must be \"block\" (segments are "
        "never dropped silently; staleness drops are the learner's)");
  }
  absl::StatusOr<EngineTasks> tasks = ResolveEngineTasks(c.env);
  if (!tasks.ok()) return tasks.status();
  if (absl::Status s = CheckSceneCameras(c, tasks->specs); !s.ok()) return s;
  LocalEngineOptions o;
  o.sync = c.run.mode == "sync";
  o.algorithm = c.rl.algorithm;
  const EngineSizes z = SizesOf(c, parts, o.sync);
  // The instructions as the policy reads them: by the tokenizer it
  // declares, else rl-vla3's word ids.
  absl::StatusOr<InstructionEncoder> encoder =
      InstructionEncoder::Of(parts.policy->declared_interface(),
                             parts.policy->max_text_len(), parts.tokenizer);
  if (!encoder.ok()) return encoder.status();
  at::Tensor text, text_len;
  if (absl::Status s =
          encoder->EncodeTable(tasks->instructions, &text, &text_len);
      !s.ok()) {
    return s;
  }
  o.rollout = RolloutOptionsOf(c, z, *tasks, parts);
  o.inference = InferenceOptionsOf(c, z, text, text_len);
  o.learner = LearnerRoleOptionsOf(c, z, parts, o.inference);
  SizeQueuesAndSegments(c, z, tasks->max_steps, &o);
  // What the policy takes per action dimension travels as it declares.
  const std::optional<PolicyInterface> declared =
      parts.policy->declared_interface();
  if (!declared) {
    if (absl::Status s = FitConfigToUndeclared(c); !s.ok()) return s;
  } else {
    if (absl::Status s = CheckDeclaredCameras(*declared, c); !s.ok()) return s;
    o.inference.taken_bytes = o.segment_shape.taken_bytes =
        TakenBytes(declared->action);
    o.policy_interface_json = PolicyInterfaceJson(*declared);
    o.action_bins = declared->action.bins;
  }
  o.task_names = std::move(tasks->names);
  o.instructions = std::move(tasks->instructions);
  o.duration_s = c.rl.duration_s;
  o.metrics_interval_s = c.metrics.interval_s;
  o.timeline = c.rl.timeline;
  return o;
}

}  // namespace rlvla3
