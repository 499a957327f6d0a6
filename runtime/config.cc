#include "runtime/config.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "runtime/camera_limits.h"
#include "runtime/config_rl.h"
#include "runtime/device_name.h"
#include "runtime/fault_plan.h"
#include "runtime/render_choices.h"

namespace rlvla3 {
namespace {

void DescribeQueue(const std::string& key, QueueConfig* q, ConfigSchema* s) {
  s->Int(key + ".capacity", &q->capacity,
         {1, static_cast<int64_t>(kMaxQueueCapacity)},
         "items the queue holds at most");
  s->Choice(key + ".overflow", &q->overflow, kOverflowPolicyNames.Names(),
            "what a push does when full");
  s->Int(key + ".max_producers", &q->max_producers, {1, 4096},
         "threads that push; storage is preallocated for them");
  s->Int(key + ".spin_before_sleep", &q->spin_before_sleep, {0, 1000000},
         "semaphore polls before a waiter sleeps (0 on oversubscribed cores)");
}

void DescribeDevices(Config* c, ConfigSchema* s) {
  s->String("inference.device", &c->inference.device,
            "where the inference actors run: cpu, cuda or cuda:N");
  s->Choice("inference.precision", &c->inference.precision, {"fp32", "bf16"},
            "the actors' forward passes: fp32, or bf16 autocast");
  s->String("learner.device", &c->learner.device,
            "where the learner trains: cpu, cuda or cuda:N");
  s->Choice("learner.precision", &c->learner.precision, {"fp32", "bf16"},
            "the learner's forward passes: fp32, or bf16 autocast");
}

absl::Status CheckDeviceNames(const Config& c) {
  for (const auto& [key, value] : {std::pair<const char*, const std::string*>{
                                       "inference.device", &c.inference.device},
                                   {"learner.device", &c.learner.device}}) {
    if (!ParseDeviceName(*value).has_value()) {
      return ConfigError{c.OriginOf(key), key, *value, "cpu, cuda or cuda:N"}
          .ToStatus();
    }
  }
  return absl::OkStatus();
}

void DescribeRun(Config* c, ConfigSchema* s) {
  s->String("run.name", &c->run.name, "run folder name");
  s->String("run.out_dir", &c->run.out_dir, "parent folder of run folders");
  s->Int("run.seed", &c->run.seed, {0, (int64_t{1} << 31) - 1},
         "env i is seeded with seed + i");
  s->Choice("run.mode", &c->run.mode, {"async", "sync"},
            "async pipeline or lock-step baseline");
  s->Choice("run.log_level", &c->run.log_level,
            {"trace", "debug", "info", "warn", "error"}, "log verbosity");
  s->Choice("run.log_format", &c->run.log_format, {"text", "json"},
            "log lines as text or as one JSON object each");
}

void DescribeCluster(Config* c, ConfigSchema* s) {
  s->Int("cluster.rollout_workers", &c->cluster.rollout_workers, {1, 256},
         "rollout processes, env.num_envs envs each");
  s->Int("cluster.inference_servers", &c->cluster.inference_servers, {1, 64},
         "inference processes; envs are sharded across them");
  s->String("cluster.host", &c->cluster.host,
            "address `up --local` binds every role to");
  s->Int("cluster.base_port", &c->cluster.base_port, {1, 65000},
         "learner port; inference i at +1+i, rollout w at +1+servers+w");
  s->String("cluster.token_file", &c->cluster.token_file,
            "file holding the shared token (else env RLVLA3_TOKEN)");
  s->String("cluster.tls_cert", &c->cluster.tls_cert,
            "PEM certificate every role serves and calls with (TLS on)");
  s->String("cluster.tls_key", &c->cluster.tls_key,
            "PEM private key of cluster.tls_cert");
  s->String("cluster.tls_ca", &c->cluster.tls_ca,
            "PEM CA that signs every role's certificate (mutual TLS)");
  s->String("cluster.tls_server_name", &c->cluster.tls_server_name,
            "name to check in servers' certificates (empty: the host)");
  s->Bool("cluster.allow_plaintext_token", &c->cluster.allow_plaintext_token,
          "send the token over plaintext off loopback");
  s->Real("cluster.heartbeat_s", &c->cluster.heartbeat_s,
          {0.05, false, 60, false}, "seconds between status polls");
  s->Real("cluster.role_timeout_s", &c->cluster.role_timeout_s,
          {0.1, false, 3600, false},
          "a role silent this long is reported down");
  s->Int("cluster.learner_ranks", &c->cluster.learner_ranks, {1, 64},
         "data-parallel learner ranks `up --local` starts");
  s->Choice("cluster.learner_backend", &c->cluster.learner_backend,
            {"gloo", "nccl"}, "collectives of the learner ranks");
  s->Real("cluster.collective_timeout_s", &c->cluster.collective_timeout_s,
          {1, false, 3600, false},
          "a learner collective waits this long for every rank");
  s->Int("cluster.max_message_mb", &c->cluster.max_message_mb, {0, 2047},
         "largest message a role's server takes, MiB (0: what it receives: "
         "learner 2 segments >= 64, inference 4 observations >= 1, rollout 1)");
  s->Int("cluster.max_streams_per_connection",
         &c->cluster.max_streams_per_connection, {1, 1 << 20},
         "concurrent calls one connection may hold open on a role's server");
  s->Int("cluster.max_queued_replies", &c->cluster.max_queued_replies,
         {1, 1 << 24},
         "replies queued on one observation stream before its reads pause "
         "(a client that does not read is held back, not buffered)");
  s->Int("cluster.liveness_timeouts", &c->cluster.liveness_timeouts, {0, 1000},
         "up --local kills and restarts a role alive but silent this many "
         "role_timeout_s (0: never)");
  s->Int("cluster.max_roster_roles", &c->cluster.max_roster_roles, {1, 1 << 20},
         "roles the learner's roster keeps; a new one past it is refused "
         "(RESOURCE_EXHAUSTED) once none silent 10x role_timeout_s can go");
}

void DescribeEnv(Config* c, ConfigSchema* s) {
  s->Int("env.num_envs", &c->env.num_envs, {1, 4096}, "envs in the pool");
  s->Int("env.image_width", &c->env.image_width, {16, 1024},
         "camera image width (pixels)");
  s->Int("env.image_height", &c->env.image_height, {16, 1024},
         "camera image height (pixels)");
  s->String("env.cameras", &c->env.cameras,
            "comma-separated scene cameras every observation holds, in "
            "order: agentview, wrist, sideview or a task file's camera "
            "(default: a declared policy's cameras, else agentview,wrist)");
  s->Bool("env.shaped_reward", &c->env.shaped_reward,
          "shaped reward instead of sparse success (a per-step reach "
          "penalty)");
  s->Real("env.progress_reward", &c->env.progress_reward,
          {0.0, false, 0.5, true},
          "graded outcome: the success reward plus this x the change of the "
          "task's progress potential (reach, hold, lift, carry, or a "
          "drawer's slide, from the first goal predicate) per step; an "
          "episode's return is success + this x (final - initial "
          "potential), and below 0.5 every success outranks every failure "
          "(0: sparse success)");
  s->Int("env.max_episode_steps", &c->env.max_episode_steps, {0, 1000000},
         "every task's horizon in control steps, in training and eval (0: "
         "the task's own)");
  s->Real("env.horizon_factor", &c->env.horizon_factor,
          {0.0, false, 100.0, false},
          "horizon rule: env.max_episode_steps = this x the median expert "
          "episode length the checkpoint's demos recorded (train and eval "
          "from a checkpoint; a given env.max_episode_steps wins, unless only "
          "the file gave it and --set gives this; 0: off)");
  s->Int("env.expert_steps", &c->env.expert_steps, {0, 1000000},
         "median expert episode length (control steps) of the demos; "
         "recorded by sft and taken from the checkpoint (0: unknown)");
  s->Choice("env.render_backend", &c->env.render_backend,
            kRenderBackendNames.Names(),
            "who renders: a GPU's EGL device, Mesa llvmpipe, or auto "
            "(docs/simulators.md)");
  s->Choice("env.readback", &c->env.readback, kReadbackNames.Names(),
            "images read back once per env worker's sweep (batched) or per "
            "image; auto: batched on a GPU's EGL (docs/simulators.md)");
  s->String("env.tasks", &c->env.tasks,
            "comma-separated task names or task files, or \"all\"");
  s->Real("env.latency_mean_ms", &c->env.latency_mean_ms,
          {0.0, false, 1e6, false},
          "latency model: mean extra ms per step (0: off)");
  s->Real("env.latency_cv", &c->env.latency_cv, {0.0, false, 10.0, false},
          "latency model: coefficient of variation");
  s->String("env.faults", &c->env.faults,
            "fault injection: comma-separated KIND@ENV:STEP, KIND one of "
            "throw, hang, wrong_shape, nan (\"\": none)");
  s->Real("env.fault_hang_s", &c->env.fault_hang_s, {0.0, false, 3600.0, false},
          "how long an injected hang stalls its step (seconds)");
  s->Real("env.step_deadline_s", &c->env.step_deadline_s,
          {0.0, false, 3600.0, false},
          "a step slower than this ends its episode and resets the env, "
          "counted as a fault (0: off)");
}

void DescribeThreads(Config* c, ConfigSchema* s) {
  s->Int("threads.torch_intra_op", &c->threads.torch_intra_op, {1, 256},
         "LibTorch intra-op threads");
  s->Int("threads.torch_inter_op", &c->threads.torch_inter_op, {1, 256},
         "LibTorch inter-op threads");
  s->Int("threads.env_workers", &c->threads.env_workers, {1, 1024},
         "env pool worker threads");
  s->Int("threads.env_worker_splits", &c->threads.env_worker_splits, {1, 1024},
         "a worker steps the queued envs of one of its splits before it "
         "announces them to inference together (1: every queued env; envs "
         "per worker: each env on its own, no batching)");
  s->Int("threads.inference_actors", &c->threads.inference_actors, {1, 64},
         "inference actor threads");
  s->Int("threads.lp_num_threads", &c->threads.lp_num_threads, {0, 64},
         "llvmpipe threads (0 = render on the calling thread)");
  s->Int("threads.learner_nice", &c->threads.learner_nice, {0, 19},
         "nice value of the learner thread: above 0, env workers and "
         "inference actors (the latency-critical path) preempt it on "
         "contended cores");
}

void DescribeBatcher(Config* c, ConfigSchema* s) {
  s->Int("batcher.max_batch", &c->batcher.max_batch, {1, 4096},
         "B_max: items per inference batch");
  s->Real("batcher.max_wait_ms", &c->batcher.max_wait_ms,
          {0.0, false, 10000.0, false},
          "T_max: ms after the first item before a partial batch fires");
  s->Real("batcher.idle_poll_ms", &c->batcher.idle_poll_ms,
          {0.0, true, 10000.0, false},
          "ms an idle actor waits before housekeeping");
}

void DescribeMetrics(Config* c, ConfigSchema* s) {
  s->Real("metrics.interval_s", &c->metrics.interval_s,
          {0.0, true, 3600.0, false}, "seconds between metric snapshots");
  s->Choice("metrics.progress", &c->metrics.progress,
            {"auto", "tty", "plain", "off"},
            "live progress line: auto picks tty or plain");
  s->Bool("metrics.jsonl", &c->metrics.jsonl, "write metrics.jsonl");
  s->Bool("metrics.csv", &c->metrics.csv, "write metrics.csv");
  s->Int("metrics.prometheus_port", &c->metrics.prometheus_port, {0, 65535},
         "serve /metrics for Prometheus on this port (0: off)");
  s->String("metrics.prometheus_host", &c->metrics.prometheus_host,
            "address the /metrics endpoint binds");
}

void DescribePolicy(Config* c, ConfigSchema* s) {
  s->Choice("policy.kind", &c->policy.kind, {"tiny_vla", "torchscript"},
            "tiny_vla (built from policy.*) or torchscript (policy.path)");
  s->String("policy.path", &c->policy.path,
            "TorchScript module (.pt) for policy.kind torchscript");
  s->Int("policy.d_model", &c->policy.d_model, {8, 4096},
         "TinyVLA token width");
  s->Int("policy.heads", &c->policy.heads, {1, 64},
         "attention heads (divides d_model)");
  s->Int("policy.layers", &c->policy.layers, {1, 64}, "transformer blocks");
  s->Int("policy.grid", &c->policy.grid, {1, 32},
         "image tokens per camera = grid^2");
  s->Int("policy.patch", &c->policy.patch, {1, 64}, "stem patch size (pixels)");
  s->Int("policy.stem_channels", &c->policy.stem_channels, {1, 1024},
         "stem width");
  s->Int("policy.chunk", &c->policy.chunk, {1, 64},
         "K: steps per action chunk");
  s->Int("policy.max_text_len", &c->policy.max_text_len, {1, 256},
         "instruction tokens kept");
  s->Bool("policy.value_detach", &c->policy.value_detach,
          "value head reads stopped-gradient features (critic loss leaves "
          "the actor's trunk alone)");
}

void DescribeSft(Config* c, ConfigSchema* s) {
  s->String("sft.tasks", &c->sft.tasks,
            "comma-separated task names (or task files), or all");
  s->Int("sft.demos_per_task", &c->sft.demos_per_task, {1, 100000},
         "successful expert episodes per task");
  s->String("sft.demos", &c->sft.demos,
            "a LIBERO/robomimic HDF5 file, or a folder of *.hdf5 files, to "
            "train from instead of collecting from the experts (`rl-vla3 "
            "demos export` writes them; \"\": the experts)");
  s->String("sft.demo_task", &c->sft.demo_task,
            "the task of every episode of sft.demos (\"\": each episode's "
            "task attribute, else the run's task whose instruction is the "
            "file's)");
  s->String("sft.demo_cameras", &c->sft.demo_cameras,
            "camera=obs_key pairs naming each env.cameras camera's dataset "
            "in sft.demos (\"\": <camera>_rgb, <camera>_image; the wrist also "
            "as eye_in_hand_rgb, robot0_eye_in_hand_image)");
  s->String("sft.demo_proprio", &c->sft.demo_proprio,
            "the obs keys of sft.demos read as proprio, in order (8 values: "
            "position 3, axis-angle 3, fingers 2); KEY:quat reads a quaternion "
            "(x, y, z, w) as its axis-angle");
  s->Choice("sft.demo_image_convention", &c->sft.demo_image_convention,
            {"auto", "opencv", "opengl"},
            "frames of sft.demos stored top row first (opencv) or bottom row "
            "first (opengl: flipped when read); auto: the file's "
            "macros_image_convention, else opencv");
  s->Bool("sft.demo_resize", &c->sft.demo_resize,
          "resize frames of sft.demos of another size to the run's (else "
          "refused)");
  s->Bool("sft.demo_masks", &c->sft.demo_masks,
          "honour sft.demos' mask/train and mask/valid (robomimic's splits: "
          "the valid demos give a validation loss, never trained on)");
  s->Real("sft.demo_noise", &c->sft.demo_noise, {0.0, false, 1.0, false},
          "std of the noise added to the expert's executed arm action (DART: "
          "the demos show recoveries; labels stay clean)");
  s->Int("sft.epochs", &c->sft.epochs, {1, 100000},
         "passes over the demonstrations");
  s->Int("sft.batch_size", &c->sft.batch_size, {1, 65536},
         "samples per optimizer step");
  s->Real("sft.lr", &c->sft.lr, {0.0, true, 1.0, false}, "AdamW learning rate");
  s->Real("sft.weight_decay", &c->sft.weight_decay, {0.0, false, 1.0, false},
          "AdamW weight decay");
  s->Real("sft.time_budget_s", &c->sft.time_budget_s, {0.0, true, 1e7, false},
          "training stops after this many seconds");
  s->Int("sft.augment_shift_px", &c->sft.augment_shift_px, {0, 32},
         "random shift of each training image, in pixels (0: off)");
  s->Real("sft.label_sigma_bins", &c->sft.label_sigma_bins,
          {0.0, false, 64.0, false},
          "soft targets: Gaussian width over neighbouring bins (0 = one-hot)");
  s->Int("sft.init_state_first", &c->sft.init_state_first, {0, 100000000},
         "first initial state the demos draw from");
  s->Int("sft.init_states", &c->sft.init_states, {1, 100000000},
         "initial states the demos draw from (sft.init_state_first on)");
  s->Int("sft.eval_episodes", &c->sft.eval_episodes, {0, 50},
         "evaluation episodes per task");
  s->Int("sft.execute_steps", &c->sft.execute_steps, {1, 64},
         "chunk steps executed before re-planning");
  s->String("sft.checkpoint", &c->sft.checkpoint,
            "output folder (default <run folder>/checkpoint)");
}

void DescribeSelfcheck(Config* c, ConfigSchema* s) {
  s->Int("selfcheck.num_envs", &c->selfcheck.num_envs, {1, 1024},
         "synthetic envs");
  s->Int("selfcheck.steps_per_env", &c->selfcheck.steps_per_env, {1, 10000000},
         "observations per env");
  s->Int("selfcheck.obs_dim", &c->selfcheck.obs_dim, {1, 1 << 20},
         "features per observation");
  s->Int("selfcheck.action_dim", &c->selfcheck.action_dim, {1, 1024},
         "action dimensions");
  s->Int("selfcheck.hidden", &c->selfcheck.hidden, {1, 1 << 16}, "MLP width");
  s->Real("selfcheck.env_step_ms", &c->selfcheck.env_step_ms,
          {0.0, false, 10000.0, false}, "emulated simulator ms per step");
}

}  // namespace

OverflowPolicy ParseOverflowPolicy(const std::string& name) {
  return kOverflowPolicyNames.Parse(name).value_or(OverflowPolicy::kBlock);
}

QueueOptions QueueConfig::ToOptions() const {
  QueueOptions o;
  o.capacity = static_cast<size_t>(capacity);
  o.overflow = ParseOverflowPolicy(overflow);
  o.max_producers = static_cast<size_t>(max_producers);
  o.spin_before_sleep = static_cast<int>(spin_before_sleep);
  return o;
}

BatcherOptions BatcherConfig::ToOptions() const {
  BatcherOptions o;
  o.max_batch = static_cast<size_t>(max_batch);
  o.max_wait = absl::Microseconds(static_cast<int64_t>(max_wait_ms * 1000.0));
  o.idle_poll = absl::Microseconds(static_cast<int64_t>(idle_poll_ms * 1000.0));
  return o;
}

// The order of these calls is the order of the fields in ConfigToYaml's
// output (and so in every config.yaml a run writes): keep it.
void DescribeConfig(Config* c, ConfigSchema* s) {
  DescribeRun(c, s);
  DescribeCluster(c, s);
  DescribeEnv(c, s);
  DescribeThreads(c, s);
  DescribeQueue("queues.request", &c->queues.request, s);
  DescribeQueue("queues.trajectory", &c->queues.trajectory, s);
  DescribeBatcher(c, s);
  DescribeMetrics(c, s);
  DescribePolicy(c, s);
  DescribeDevices(c, s);
  DescribeSft(c, s);
  config_internal::DescribeRlBatch(c, s);
  config_internal::DescribeRlOptimizer(c, s);
  config_internal::DescribeRlRun(c, s);
  DescribeSelfcheck(c, s);
}

namespace {

absl::Status CheckCameras(const Config& c) {
  const std::vector<std::string> names = EnvCameras(c.env);
  const std::set<std::string> distinct(names.begin(), names.end());
  if (names.empty() || names.size() > static_cast<size_t>(kMaxCameras) ||
      distinct.size() != names.size() || distinct.count("") > 0) {
    return ConfigError{c.OriginOf("env.cameras"), "env.cameras", c.env.cameras,
                       absl::StrCat("1 to ", kMaxCameras,
                                    " distinct camera names, comma-separated")}
        .ToStatus();
  }
  return absl::OkStatus();
}

// The reward keys together, and the GRPO-only draws of decisions.
absl::Status CheckRewardAndDraws(const Config& c) {
  const std::string& origin = c.origin;
  if (c.env.shaped_reward && c.env.progress_reward > 0) {
    return ConfigError{c.OriginOf("env.progress_reward"), "env.progress_reward",
                       absl::StrCat(c.env.progress_reward),
                       "0 when env.shaped_reward is true (one reward at a "
                       "time)"}
        .ToStatus();
  }
  if (c.rl.algorithm != "grpo" &&
      (c.rl.train_decisions < 1 || c.rl.max_train_decisions > 0)) {
    const bool share = c.rl.train_decisions < 1;
    return ConfigError{
        origin, share ? "rl.train_decisions" : "rl.max_train_decisions",
        share ? absl::StrCat(c.rl.train_decisions)
              : absl::StrCat(c.rl.max_train_decisions),
        share ? "1 unless rl.algorithm is grpo (a PPO sample's advantage is "
                "its own: there is no episode to draw from)"
              : "0 unless rl.algorithm is grpo (a PPO sample's advantage is "
                "its own: there is no episode to draw from)"}
        .ToStatus();
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Config> LoadConfig(const std::string& path,
                                  const std::vector<std::string>& overrides) {
  Config c;
  ConfigSchema schema;
  DescribeConfig(&c, &schema);
  if (!path.empty()) {
    if (absl::Status s = schema.ApplyYamlFile(path); !s.ok()) return s;
  }
  for (const auto& o : overrides) {
    if (absl::Status s = schema.ApplyOverride(o); !s.ok()) return s;
  }
  const std::string origin = path.empty() ? "--set" : path;
  c.origin = origin;
  c.given = schema.assigned();
  for (const std::string& o : overrides) {
    c.overridden.insert(std::string(absl::StripAsciiWhitespace(
        absl::string_view(o).substr(0, o.find('=')))));
  }
  if (absl::Status s = CheckDeviceNames(c); !s.ok()) return s;
  if (c.batcher.max_batch > c.queues.request.capacity) {
    return ConfigError{c.OriginOf("batcher.max_batch"), "batcher.max_batch",
                       absl::StrCat(c.batcher.max_batch),
                       absl::StrCat("at most queues.request.capacity (",
                                    c.queues.request.capacity, ")")}
        .ToStatus();
  }
  if (c.policy.kind == "torchscript" && c.policy.path.empty()) {
    return ConfigError{c.OriginOf("policy.path"), "policy.path", "\"\"",
                       "a TorchScript module (.pt) when policy.kind is "
                       "torchscript"}
        .ToStatus();
  }
  if (absl::StatusOr<FaultPlan> p = ParseFaultPlan(c.env.faults); !p.ok()) {
    return ConfigError{
        c.OriginOf("env.faults"), "env.faults", c.env.faults,
        absl::StrCat("comma-separated KIND@ENV:STEP; ", p.status().message())}
        .ToStatus();
  }
  if (c.run.mode == "sync" && c.cluster.inference_servers != 1) {
    return ConfigError{c.OriginOf("cluster.inference_servers"),
                       "cluster.inference_servers",
                       absl::StrCat(c.cluster.inference_servers),
                       "1 when run.mode is sync (the sync barrier waits at "
                       "one inference server for every env)"}
        .ToStatus();
  }
  if (c.cluster.learner_backend == "nccl" &&
      !ParseDeviceName(c.learner.device)->cuda) {
    return ConfigError{c.OriginOf("learner.device"), "learner.device",
                       c.learner.device,
                       "cuda or cuda:N when cluster.learner_backend is nccl "
                       "(NCCL reduces GPU tensors)"}
        .ToStatus();
  }
  if (c.rl.resume.empty()) {
    return ConfigError{c.OriginOf("rl.resume"), "rl.resume", "",
                       "auto, never or a checkpoint folder"}
        .ToStatus();
  }
  if (absl::Status s = CheckCameras(c); !s.ok()) return s;
  if (absl::Status s = CheckRewardAndDraws(c); !s.ok()) return s;
  if (c.rl.algorithm == "grpo" && c.env.num_envs % c.rl.grpo_group_size != 0) {
    return ConfigError{c.OriginOf("env.num_envs"), "env.num_envs",
                       absl::StrCat(c.env.num_envs),
                       absl::StrCat("a multiple of rl.grpo_group_size (",
                                    c.rl.grpo_group_size, ")")}
        .ToStatus();
  }
  return c;
}

std::vector<std::string> EnvCameras(const EnvConfig& e) {
  std::vector<std::string> names =
      absl::StrSplit(e.cameras, ',', absl::SkipWhitespace());
  for (std::string& n : names) n = std::string(absl::StripAsciiWhitespace(n));
  return names;
}

std::string ConfigToYaml(const Config& c) {
  Config copy = c;
  ConfigSchema schema;
  DescribeConfig(&copy, &schema);
  return schema.ToYaml();
}

}  // namespace rlvla3
