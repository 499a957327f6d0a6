// File: runtime/config.h
// -----------------------------------------------------------------------------
// The typed configuration of an rl-vla3 run, with defaults. Every verb loads it
// the same way: defaults, then a YAML file, then `--set key=value` overrides,
// then cross-field checks. Any problem is a ConfigError (the CLI exits 2 with
// one line naming file, key, value and what was expected).
//
// Example:
//   absl::StatusOr<Config> cfg = LoadConfig("configs/selfcheck.yaml",
//                                           {"batcher.max_batch=64"});
//   if (!cfg.ok()) { std::fprintf(stderr, "%s\n", cfg.status().message());
//   return 2; } BatcherOptions b = cfg->batcher.ToOptions();
// -----------------------------------------------------------------------------
#ifndef RLVLA3_RUNTIME_CONFIG_H_
#define RLVLA3_RUNTIME_CONFIG_H_

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/bounded_queue.h"
#include "runtime/config_schema.h"
#include "runtime/dynamic_batcher.h"

namespace rlvla3 {

struct RunConfig {
  std::string name = "run";         // run folder name under out_dir
  std::string out_dir = "runs";     // parent of run folders
  int64_t seed = 0;                 // env i is seeded with seed + i
  std::string mode = "async";       // async | sync
  std::string log_level = "info";   // spdlog level
  std::string log_format = "text";  // text | json (one object per line)
};

// Threads are a budget on a shared CPU: every pool size is set here.
struct ThreadsConfig {
  int64_t torch_intra_op = 1;     // at::set_num_threads
  int64_t torch_inter_op = 1;     // at::set_num_interop_threads
  int64_t env_workers = 1;        // env pool worker threads
  int64_t env_worker_splits = 1;  // sweeps per worker (Sample Factory splits)
  int64_t inference_actors =
      1;  // threads taking batches from the request queue
  int64_t lp_num_threads =
      0;  // llvmpipe rasteriser threads (0 = render on caller)
  int64_t learner_nice = 0;  // learner thread's nice value (async: yields
                             // contended cores to env and inference)
};

struct QueueConfig {
  int64_t capacity = 1024;
  std::string overflow = "block";  // block | drop_oldest | reject
  int64_t max_producers = 16;
  int64_t spin_before_sleep = 0;

  QueueOptions ToOptions() const;
};

struct QueuesConfig {
  QueueConfig request;     // level 1: observations waiting for inference
  QueueConfig trajectory;  // level 2: segments waiting for the learner
};

struct BatcherConfig {
  int64_t max_batch = 32;      // B_max
  double max_wait_ms = 2.0;    // T_max after the first item
  double idle_poll_ms = 50.0;  // wake-up period while no request arrives

  BatcherOptions ToOptions() const;
};

struct MetricsConfig {
  double interval_s = 1.0;        // snapshot / progress period
  std::string progress = "auto";  // auto | tty | plain | off
  bool jsonl = true;              // write metrics.jsonl into the run folder
  bool csv = false;               // write metrics.csv into the run folder
  // Prometheus text exposition at http://HOST:PORT/metrics (0: off); under
  // `up --local` role k of the layout serves at prometheus_port + k.
  int64_t prometheus_port = 0;
  std::string prometheus_host = "127.0.0.1";
};

// The built-in self-check: synthetic envs -> request queue -> dynamic batcher
// -> a LibTorch MLP policy -> replies, with tensors round-tripped through the
// wire codec. Used by `rl-vla3 selfcheck` until the full engine exists.
struct SelfCheckConfig {
  int64_t num_envs = 16;        // synthetic envs, one producer thread each
  int64_t steps_per_env = 500;  // observations each env submits
  int64_t obs_dim = 64;         // float32 features per observation
  int64_t action_dim = 7;       // action dimensions
  int64_t hidden = 256;         // MLP width
  double env_step_ms = 1.0;     // emulated simulator time per step
};

// The simulated tasks (envs/).
struct EnvConfig {
  int64_t num_envs = 8;       // envs in the pool
  int64_t image_width = 128;  // camera resolution (pixels)
  int64_t image_height = 128;
  // The scene cameras every observation holds, in order, comma-separated
  // (EnvCameras splits it; a declared policy's cameras are taken when not
  // given).
  std::string cameras = "agentview,wrist";
  bool shaped_reward = false;  // sparse success reward unless true
  // > 0: the success reward plus this x the change of the task's progress
  // potential per step (envs/task_progress.h); < 0.5.
  double progress_reward = 0;
  int64_t max_episode_steps = 0;  // every task's horizon (0: its own)
  // Horizon rule: with a checkpoint that records its demos' median expert
  // length (expert_steps), max_episode_steps = ceil(horizon_factor x it)
  // unless given (0: off).
  double horizon_factor = 0;
  int64_t expert_steps = 0;  // the checkpoint's, adopted (0: unknown)
  // Who renders: auto | gpu (a GPU vendor's EGL device) | mesa (llvmpipe).
  std::string render_backend = "auto";
  // How images come back: auto | batched (once per env worker's sweep) |
  // per_image (envs/manipulation_env.h Readback).
  std::string readback = "auto";
  std::string tasks = "all";   // env i runs task i % n of this list ("all")
  double latency_mean_ms = 0;  // extra lognormal wall time per step (0: off)
  double latency_cv = 0.5;     // its coefficient of variation
  // Fault injection (runtime/fault_plan.h), e.g. "throw@1:5,nan@3:12".
  std::string faults = "";
  double fault_hang_s = 3;     // how long an injected hang stalls its step
  double step_deadline_s = 0;  // a step slower than this is a fault (0: off)
};

// TinyVLA sizes (policies/tiny_vla.h); the defaults train on a 2-core CPU.
struct PolicyConfig {
  // tiny_vla: TinyVLA built from the keys below; torchscript: the user's
  // scripted module at `path` (act/evaluate, docs/policies.md), trained the
  // same way.
  std::string kind = "tiny_vla";
  std::string path = "";
  int64_t d_model = 128;
  int64_t heads = 4;
  int64_t layers = 2;
  int64_t grid = 6;   // image tokens per camera = grid^2
  int64_t patch = 8;  // stem patch size (pixels)
  int64_t stem_channels = 32;
  int64_t chunk = 4;          // K: steps per action chunk
  int64_t max_text_len = 16;  // instruction tokens kept
  bool value_detach = true;   // value head on stopped-gradient features
};

// Where the inference actors' and the learner's tensors live: "cpu", "cuda"
// or "cuda:N" (runtime/device_name.h). A GPU named here must exist where the
// role runs (checked when the roles start, not when the config loads).
struct InferenceConfig {
  std::string device = "cpu";
  std::string precision = "fp32";  // fp32, or bf16: Act under bf16 autocast
};
struct LearnerConfig {
  std::string device = "cpu";
  // fp32, or bf16: the learner's forward passes under bf16 autocast (the
  // weights, gradients and AdamW state stay fp32).
  std::string precision = "fp32";
};

// Behaviour cloning from the scripted experts (`rl-vla3 sft`).
struct SftConfig {
  std::string tasks = "all";    // comma-separated task names, or "all"
  int64_t demos_per_task = 20;  // successful expert episodes collected per task
  // A LIBERO/robomimic HDF5 file, or a folder of *.hdf5 files, to train from
  // instead of the experts ("": collect from the experts).
  std::string demos = "";
  // How a demo file's fields map to the run's (docs/policies.md): the task
  // of every episode ("": each episode's task attribute, else the run's task
  // whose instruction the file's is); camera=obs_key pairs ("": <camera>_rgb,
  // <camera>_image, the wrist as eye_in_hand); the proprio obs keys, a
  // quaternion one marked :quat; the frames' convention; resizing; splits.
  std::string demo_task = "";
  std::string demo_cameras = "";
  std::string demo_proprio = "ee_pos,ee_ori,gripper_states";
  std::string demo_image_convention = "auto";  // auto | opencv | opengl
  bool demo_resize = false;
  bool demo_masks = true;
  double demo_noise = 0.0;  // std of Gaussian noise on the executed arm action
                            // (DART); labels stay the expert's clean action
  int64_t epochs = 10;      // passes over the demonstrations
  int64_t batch_size = 64;
  double lr = 3e-4;  // AdamW learning rate
  double weight_decay = 0.01;
  double time_budget_s = 1500;   // training stops early when over this
  int64_t augment_shift_px = 0;  // random image shift (DrQ) in pixels; 0: off
  double label_sigma_bins =
      2.0;  // soft BC targets: Gaussian width in bins (0 = one-hot)
  // Initial states the demos start from: init_state_first ..
  // init_state_first + init_states - 1 (disjoint from eval's held-out ones).
  int64_t init_state_first = 0;
  int64_t init_states = 50;
  int64_t eval_episodes = 10;  // per task, initial states 0..n-1
  int64_t execute_steps = 1;   // chunk steps executed before re-planning
  std::string checkpoint =
      "";  // output folder; default <run folder>/checkpoint
};

// Reinforcement learning (`rl-vla3 train` / `bench`;
// services/{rollout,inference,learner}/).
struct RlConfig {
  std::string algorithm = "ppo";  // ppo | grpo
  int64_t rollout_len = 16;       // decisions per env per segment (PPO)
  int64_t micro_batch = 32;       // samples per forward/backward
  int64_t ppo_epochs = 2;         // passes over each global batch
  int64_t minibatches = 2;        // optimizer steps per pass (shuffled)
  int64_t rollouts_per_step = 1;  // global batch = this x num_envs x
                                  // rollout_len decisions (PPO) or this x
                                  // num_envs episodes (GRPO)
  double lr = 1e-4;               // AdamW learning rate
  double value_lr = 1e-3;         // AdamW learning rate of the value head
  double action_scale_lr = 1e-2;  // ... of the action log-temperatures
  double weight_decay = 0.0;
  double max_grad_norm = 1.0;  // gradient clipping (0: off)
  double gamma = 0.99;         // discount per decision
  double gae_lambda = 0.95;
  double clip_eps = 0.2;         // PPO ratio clip against the proximal policy
  double clip_eps_high = 0.28;   // its upper side (clip-higher; 0: clip_eps)
  bool dynamic_sampling = true;  // GRPO: update over informative groups
  int64_t min_informative_groups = 0;  // GRPO refill below this (0: off)
  int64_t refill_max_rounds = 4;       // global batches carried at most
  double ref_kl_coef = 0.0;        // anchor: KL to the starting policy (0: off)
  std::string ratio = "decision";  // PPO ratio per decision | step
  double is_cap = 2.0;             // behaviour importance weight truncation
  double value_coef = 0.5;         // value loss weight (PPO)
  double entropy_coef = 0.0;       // entropy bonus weight
  double negative_advantage_weight = 1.0;  // scale of negative advantages
  int64_t critic_warmup_steps = 0;   // first steps train the value head only
  bool normalize_advantages = true;  // PPO: by running moments
  double target_kl = 0.0;  // adaptive lr: KL per action token (0: off)
  double kl_stop = 0.0;    // end an update past this KL per token (0: off)
  // GRPO: a random share of each episode's decisions trained (1: all), and
  // at most this many per episode (0: no cap).
  double train_decisions = 1.0;
  int64_t max_train_decisions = 0;
  // GRPO: a group's return std is taken as at least this when advantages
  // are normalised (0.1 never binds for 0/1 returns in groups up to 99).
  double grpo_std_floor = 0.1;
  double lr_min = 1e-7, lr_max = 1e-3;  // bounds of the adaptive lr
  double lr_adapt_factor = 1.5;         // its multiplicative step
  // > 0: RL starts with every action dimension at this sampling temperature
  // (replacing the init checkpoint's learned ones); 0 keeps them.
  double init_action_temperature = 0.0;
  int64_t max_policy_lag = 1;  // versions rollout may run ahead of the learner
  // A learner with no segment and nothing to train this long asks the
  // rollout workers to admit one more quota (units lost on the way; 0: off).
  double starved_after_s = 10;
  int64_t execute_steps = 4;    // chunk steps executed per decision
  int64_t grpo_group_size = 4;  // G episodes per initial state (GRPO)
  // Initial states training draws from: init_state_first ..
  // init_state_first + init_states - 1 (eval holds out the ones after).
  int64_t init_state_first = 0;
  int64_t init_states = 50;
  bool bootstrap_truncation = true;  // PPO: a time limit is not terminal
  double duration_s = 120;           // run length (wall time)
  int64_t max_steps = 0;  // stop after this many optimizer steps (0: off)
  int64_t checkpoint_every = 0;     // versions between checkpoints (0: by time)
  double checkpoint_every_s = 120;  // seconds between checkpoints (0: by steps)
  int64_t keep_checkpoints = 3;     // newest complete checkpoints kept (0: all)
  std::string resume = "auto";      // auto | never | a checkpoint folder
  std::string init_checkpoint = "";  // start from this checkpoint folder
  int64_t success_window = 50;       // episodes in the rolling success rate
  bool timeline = false;  // record per-stage intervals (tests, report)
};

// The roles as separate processes (`serve`, `up --local`): how many of each,
// where, and the shared token. Global env ids: rollout worker w owns
// [w * env.num_envs, (w + 1) * env.num_envs).
struct ClusterConfig {
  int64_t rollout_workers = 1;     // rollout processes (env.num_envs each)
  int64_t inference_servers = 1;   // envs are sharded across them
  std::string host = "127.0.0.1";  // where `up --local` binds every role
  int64_t base_port = 50051;    // learner; inference i: +1+i; rollout w: +1+N+w
  std::string token_file = "";  // shared token (else env RLVLA3_TOKEN; none)
  // TLS between roles (all three files, or none: plaintext). Every role
  // serves with tls_cert/tls_key and requires its callers' certificates to be
  // signed by tls_ca (mutual TLS); it calls others with the same pair.
  std::string tls_cert = "";
  std::string tls_key = "";
  std::string tls_ca = "";
  std::string tls_server_name = "";  // name checked in servers' certificates
  // The token over plaintext to or from a non-loopback address is refused
  // unless this is true.
  bool allow_plaintext_token = false;
  double heartbeat_s = 1;      // status polls by `up` and the roles
  double role_timeout_s = 10;  // a role silent this long is reported down
  // Data-parallel learner ranks (`up --local` starts this many; on a cluster
  // WORLD_SIZE says). Rank 0 at base_port, rank r at +N+M+r, the group's
  // rendezvous (TCPStore) at +N+M+ranks (N inference, M rollout).
  int64_t learner_ranks = 1;
  std::string learner_backend = "gloo";  // gloo (CPU) | nccl (CUDA builds)
  double collective_timeout_s = 60;      // a rank silent this long: error
  // What a peer may hold of a role process (issue 49 item 9): the largest
  // message a role's server takes (MiB; 0: sized to what the role receives),
  // concurrent streams per connection, replies queued on one observation
  // stream before its reads pause, roles the learner's roster keeps.
  int64_t max_message_mb = 0;
  int64_t max_streams_per_connection = 2048;
  int64_t max_queued_replies = 1024;
  int64_t max_roster_roles = 1024;
  // `up --local`'s liveness probe: a role process alive but answering no
  // status call for this many role_timeout_s is killed and restarted
  // (0: never).
  int64_t liveness_timeouts = 6;
};

struct Config {
  RunConfig run;
  ClusterConfig cluster;
  EnvConfig env;
  ThreadsConfig threads;
  QueuesConfig queues;
  BatcherConfig batcher;
  MetricsConfig metrics;
  SelfCheckConfig selfcheck;
  PolicyConfig policy;
  InferenceConfig inference;
  LearnerConfig learner;
  SftConfig sft;
  RlConfig rl;
  // Where the values came from (the file, or "--set"), for errors found
  // after loading. Not a key.
  std::string origin = "--set";
  // The keys the file or an override gave (the rest are defaults): what a
  // checkpoint's recorded values may fill in. Not a key.
  std::set<std::string> given;
  // The keys given with --set (they win over the file). Not a key.
  std::set<std::string> overridden;

  // Where `key`'s value came from, for an error found after loading: "--set"
  // for a key given on the command line, else the file (`origin`).
  std::string OriginOf(const std::string& key) const {
    return overridden.count(key) > 0 ? "--set" : origin;
  }
};

// Binds every field of `*c` into `*schema` (keys, ranges, help texts).
void DescribeConfig(Config* c, ConfigSchema* schema);

// Defaults <- file (if non-empty) <- overrides ("key=value"), then cross-field
// checks. Errors are ConfigErrors (see IsConfigError).
absl::StatusOr<Config> LoadConfig(const std::string& path,
                                  const std::vector<std::string>& overrides);

// The resolved config as YAML (every key, defaults filled in).
std::string ConfigToYaml(const Config& c);

// env.cameras as names, in order (checked at load: 1 to kMaxCameras
// distinct, non-empty names).
std::vector<std::string> EnvCameras(const EnvConfig& e);

// Parses "block" / "drop_oldest" / "reject".
OverflowPolicy ParseOverflowPolicy(const std::string& name);

}  // namespace rlvla3

#endif  // RLVLA3_RUNTIME_CONFIG_H_
