// One default per key: the config (runtime/config.h) holds it, and an option
// struct a key fills starts from the same value, so a library used without
// the config (a test, a bench, another program) behaves as a default run.
// Each row names its key; a row that fails names the key that disagrees.
#include <gtest/gtest.h>

#include <string>

#include "runtime/config.h"
#include "services/options/config_bridge.h"
#include "services/options/engine_config.h"

namespace rlvla3 {
namespace {

#define EXPECT_KEY(key, from_config, by_default) \
  EXPECT_EQ(from_config, by_default) << "key " << key

TEST(OptionDefaults, LearnerOptionsStartFromTheConfigsDefaults) {
  const LearnerOptions c = LearnerOptionsFromConfig(RlConfig{});
  const LearnerOptions d;
  EXPECT_KEY("rl.algorithm", c.algorithm, d.algorithm);
  EXPECT_KEY("rl.clip_eps", c.loss.clip_eps, d.loss.clip_eps);
  EXPECT_KEY("rl.clip_eps_high", c.loss.clip_eps_high, d.loss.clip_eps_high);
  EXPECT_KEY("rl.is_cap", c.loss.is_cap, d.loss.is_cap);
  EXPECT_KEY("rl.value_coef", c.loss.value_coef, d.loss.value_coef);
  EXPECT_KEY("rl.entropy_coef", c.loss.entropy_coef, d.loss.entropy_coef);
  EXPECT_KEY("rl.negative_advantage_weight", c.loss.negative_advantage_weight,
             d.loss.negative_advantage_weight);
  EXPECT_KEY("rl.dynamic_sampling", c.dynamic_sampling, d.dynamic_sampling);
  EXPECT_KEY("rl.ratio", c.per_step_ratio, d.per_step_ratio);
  EXPECT_KEY("rl.gamma", c.gamma, d.gamma);
  EXPECT_KEY("rl.gae_lambda", c.gae_lambda, d.gae_lambda);
  EXPECT_KEY("rl.micro_batch", c.micro_batch, d.micro_batch);
  EXPECT_KEY("rl.lr", c.lr, d.lr);
  EXPECT_KEY("rl.weight_decay", c.weight_decay, d.weight_decay);
  EXPECT_KEY("rl.max_grad_norm", c.max_grad_norm, d.max_grad_norm);
  EXPECT_KEY("rl.value_lr", c.value_lr, d.value_lr);
  EXPECT_KEY("rl.action_scale_lr", c.action_scale_lr, d.action_scale_lr);
  EXPECT_KEY("rl.normalize_advantages", c.normalize_advantages,
             d.normalize_advantages);
  EXPECT_KEY("rl.critic_warmup_steps", c.critic_warmup_steps,
             d.critic_warmup_steps);
  EXPECT_KEY("rl.target_kl", c.target_kl, d.target_kl);
  EXPECT_KEY("rl.lr_min", c.lr_min, d.lr_min);
  EXPECT_KEY("rl.lr_max", c.lr_max, d.lr_max);
  EXPECT_KEY("rl.lr_adapt_factor", c.lr_adapt_factor, d.lr_adapt_factor);
  EXPECT_KEY("rl.ppo_epochs", c.ppo_epochs, d.ppo_epochs);
  EXPECT_KEY("rl.minibatches", c.minibatches, d.minibatches);
}

TEST(OptionDefaults, PolicyAndEnvOptionsStartFromTheConfigsDefaults) {
  const Config config;
  const TinyVLAOptions c = TinyVLAOptionsFromConfig(config, 100);
  const TinyVLAOptions d;
  EXPECT_KEY("policy.max_text_len", c.max_text_len(), d.max_text_len());
  EXPECT_KEY("policy.d_model", c.d_model(), d.d_model());
  EXPECT_KEY("policy.heads", c.heads(), d.heads());
  EXPECT_KEY("policy.layers", c.layers(), d.layers());
  EXPECT_KEY("policy.grid", c.grid(), d.grid());
  EXPECT_KEY("policy.patch", c.patch(), d.patch());
  EXPECT_KEY("policy.stem_channels", c.stem_channels(), d.stem_channels());
  EXPECT_KEY("policy.chunk", c.chunk(), d.chunk());
  EXPECT_KEY("policy.value_detach", c.value_detach(), d.value_detach());
  const EnvOptions e = EnvOptionsFromConfig(config);
  const EnvOptions ed;
  EXPECT_KEY("env.image_width", e.image_width, ed.image_width);
  EXPECT_KEY("env.image_height", e.image_height, ed.image_height);
  EXPECT_KEY("env.shaped_reward", e.shaped_reward, ed.shaped_reward);
  EXPECT_KEY("env.max_episode_steps", e.max_episode_steps,
             ed.max_episode_steps);
  EXPECT_KEY("env.render_backend", e.render_backend, ed.render_backend);
  const EnvPoolOptions p = EnvPoolOptionsFromConfig(config, {});
  const EnvPoolOptions pd;
  EXPECT_KEY("env.num_envs", p.num_envs, pd.num_envs);
  EXPECT_KEY("threads.env_workers", p.num_threads, pd.num_threads);
  EXPECT_KEY("run.seed", p.seed, pd.seed);
  EXPECT_KEY("threads.lp_num_threads", p.lp_num_threads, pd.lp_num_threads);
  EXPECT_KEY("env.step_deadline_s", p.step_deadline_s, pd.step_deadline_s);
  EXPECT_KEY("env.latency_mean_ms", p.latency.mean_ms, pd.latency.mean_ms);
  EXPECT_KEY("env.readback", p.env.readback, pd.env.readback);
}

TEST(OptionDefaults, QueueAndBatcherOptionsStartFromTheConfigsDefaults) {
  const Config config;
  const BatcherOptions b = config.batcher.ToOptions();
  const BatcherOptions bd;
  EXPECT_KEY("batcher.max_batch", b.max_batch, bd.max_batch);
  EXPECT_KEY("batcher.max_wait_ms", b.max_wait, bd.max_wait);
  EXPECT_KEY("batcher.idle_poll_ms", b.idle_poll, bd.idle_poll);
  const QueueOptions q = config.queues.trajectory.ToOptions();
  const QueueOptions qd;
  EXPECT_KEY("queues.trajectory.capacity", q.capacity, qd.capacity);
  EXPECT_KEY("queues.trajectory.overflow", q.overflow, qd.overflow);
  EXPECT_KEY("queues.trajectory.max_producers", q.max_producers,
             qd.max_producers);
  EXPECT_KEY("queues.trajectory.spin_before_sleep", q.spin_before_sleep,
             qd.spin_before_sleep);
}

TEST(OptionDefaults, RoleOptionsStartFromTheConfigsDefaults) {
  const Config config;
  absl::StatusOr<EngineParts> parts = BuildEngineParts(config);
  ASSERT_TRUE(parts.ok()) << parts.status();
  absl::StatusOr<LocalEngineOptions> o =
      LocalEngineOptionsFromConfig(config, *parts);
  ASSERT_TRUE(o.ok()) << o.status();
  const RolloutWorkerOptions rd;
  EXPECT_KEY("rl.success_window", o->rollout.success_window, rd.success_window);
  EXPECT_KEY("rl.init_state_first", o->rollout.init_first, rd.init_first);
  EXPECT_KEY("rl.init_states", o->rollout.init_count, rd.init_count);
  EXPECT_KEY("rl.bootstrap_truncation", o->rollout.bootstrap_truncation,
             rd.bootstrap_truncation);
  EXPECT_KEY("rl.max_policy_lag", o->rollout.max_policy_lag, rd.max_policy_lag);
  const CheckpointOptions kd;
  EXPECT_KEY("rl.checkpoint_every", o->learner.checkpoints.every_versions,
             kd.every_versions);
  EXPECT_KEY("rl.checkpoint_every_s", o->learner.checkpoints.every_s,
             kd.every_s);
  EXPECT_KEY("rl.keep_checkpoints", o->learner.checkpoints.keep, kd.keep);
  const InferenceServerOptions id;
  EXPECT_KEY("threads.inference_actors", o->inference.actors, id.actors);
  EXPECT_KEY("env.image_height", o->inference.image_height, id.image_height);
  EXPECT_KEY("env.image_width", o->inference.image_width, id.image_width);
  EXPECT_KEY("inference.precision", o->inference.bf16, id.bf16);
  EXPECT_KEY("learner.precision", o->learner.core.bf16, LearnerOptions{}.bf16);
  EXPECT_KEY("rl.max_steps", o->learner.max_steps,
             LearnerRoleOptions{}.max_steps);
}

}  // namespace
}  // namespace rlvla3
