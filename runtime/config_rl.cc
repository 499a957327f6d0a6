// The rl.* keys' descriptions (runtime/config.cc's DescribeConfig calls
// them in this order): what one global batch holds, the optimizer and its
// step size, and the run's length, states and checkpoints.
#include "runtime/config_rl.h"

#include "runtime/config.h"

namespace rlvla3::config_internal {

// rl.*: what one global batch holds and how an update cuts it.
void DescribeRlBatch(Config* c, ConfigSchema* s) {
  s->Choice("rl.algorithm", &c->rl.algorithm, {"ppo", "grpo"}, "RL objective");
  s->Int("rl.rollout_len", &c->rl.rollout_len, {1, 100000},
         "decisions per env per segment");
  s->Int("rl.rollouts_per_step", &c->rl.rollouts_per_step, {1, 1024},
         "rollouts per update (one version): the global batch is this x "
         "num_envs "
         "x rollout_len decisions (PPO) or this x num_envs episodes (GRPO)");
  s->Int("rl.micro_batch", &c->rl.micro_batch, {1, 65536},
         "samples per forward/backward");
  s->Int("rl.ppo_epochs", &c->rl.ppo_epochs, {1, 64},
         "passes over each global batch (PPO and GRPO)");
  s->Int("rl.minibatches", &c->rl.minibatches, {1, 4096},
         "shuffled minibatches per pass, one optimizer step each; the "
         "proximal policy is the one at the start of the update");
  s->Real("rl.train_decisions", &c->rl.train_decisions, {0.0, true, 1.0, false},
          "GRPO: the share of each episode's decisions trained, drawn at "
          "random (the advantage is per episode, so the update stays "
          "unbiased; 1: all)");
  s->Real("rl.grpo_std_floor", &c->rl.grpo_std_floor, {0.0, false, 10.0, false},
          "GRPO: a group's return std is taken as at least this when its "
          "advantages are normalised, so returns a hair apart (graded "
          "outcomes) are not scaled up to full-size advantages; 0.1 never "
          "binds for 0/1 success in groups of up to 99");
  s->Int("rl.max_train_decisions", &c->rl.max_train_decisions, {0, 1000000},
         "GRPO: at most this many of an episode's decisions trained, drawn "
         "at random (long horizons cost no more per update; 0: no cap)");
}

// rl.*: the optimizer, the loss's terms and the adaptive learning rate.
void DescribeRlOptimizer(Config* c, ConfigSchema* s) {
  s->Real("rl.lr", &c->rl.lr, {0.0, true, 1.0, false}, "AdamW learning rate");
  s->Real("rl.weight_decay", &c->rl.weight_decay, {0.0, false, 1.0, false},
          "AdamW weight decay");
  s->Real("rl.max_grad_norm", &c->rl.max_grad_norm, {0.0, false, 1e6, false},
          "gradient norm clip (0: off)");
  s->Real("rl.value_lr", &c->rl.value_lr, {0.0, true, 1.0, false},
          "AdamW learning rate of the value head (PPO)");
  s->Real("rl.action_scale_lr", &c->rl.action_scale_lr,
          {0.0, false, 1.0, false},
          "AdamW learning rate of the per-dimension action log-temperatures "
          "(0: frozen)");
  s->Real("rl.gamma", &c->rl.gamma, {0.0, false, 1.0, false},
          "discount per decision");
  s->Real("rl.gae_lambda", &c->rl.gae_lambda, {0.0, false, 1.0, false},
          "GAE lambda");
  s->Real("rl.clip_eps", &c->rl.clip_eps, {0.0, true, 1.0, false},
          "PPO clip range (its lower side: ratio >= 1 - clip_eps)");
  s->Real("rl.clip_eps_high", &c->rl.clip_eps_high, {0.0, false, 10.0, false},
          "upper side of the clip, ratio <= 1 + clip_eps_high (clip-higher, "
          "DAPO / SimpleVLA-RL 0.28; 0: rl.clip_eps)");
  s->Choice("rl.ratio", &c->rl.ratio, {"decision", "step"},
            "the PPO ratio (its clip and IS weight): one per decision, of "
            "the summed log-probs of its executed chunk steps, or one per "
            "executed step, averaged");
  s->Int("rl.min_informative_groups", &c->rl.min_informative_groups,
         {0, 100000},
         "GRPO with PPO epochs: a global batch with fewer informative groups "
         "is carried into the next one (the version advances, the weights "
         "do not) instead of trained (0: off)");
  s->Real("rl.ref_kl_coef", &c->rl.ref_kl_coef, {0.0, false, 1000.0, false},
          "anchor: weight of KL(current || starting policy) per action token "
          "in the loss (the starting policy: the learner's first weights, "
          "after SFT the SFT policy; 0: off)");
  s->Int("rl.refill_max_rounds", &c->rl.refill_max_rounds, {1, 1000},
         "global batches carried over in a row at most (rl.min_informative_"
         "groups); then the update trains what it has");
  s->Bool("rl.dynamic_sampling", &c->rl.dynamic_sampling,
          "GRPO: the update is a mean over the informative groups (those "
          "whose returns differ; uniform ones are never trained either way)");
  s->Real("rl.is_cap", &c->rl.is_cap, {1.0, false, 1e6, false},
          "behaviour importance weight cap");
  s->Real("rl.value_coef", &c->rl.value_coef, {0.0, false, 1e3, false},
          "value loss weight");
  s->Real("rl.entropy_coef", &c->rl.entropy_coef, {0.0, false, 10.0, false},
          "entropy bonus weight");
  s->Real("rl.negative_advantage_weight", &c->rl.negative_advantage_weight,
          {0.0, false, 1.0, false},
          "scale of negative advantages in the policy loss (1: plain PPO; 0: "
          "self-imitation of better-than-expected decisions only)");
  s->Int("rl.critic_warmup_steps", &c->rl.critic_warmup_steps, {0, 1000000},
         "updates (versions) that train only the value head (PPO)");
  s->Bool(
      "rl.normalize_advantages", &c->rl.normalize_advantages,
      "PPO: normalise advantages by running moments (about one global batch)");
  s->Real("rl.target_kl", &c->rl.target_kl, {0.0, false, 10.0, false},
          "adaptive learning rate: KL(before || after) per action token "
          "(executed chunk step x action dimension) that one update aims at "
          "(0: fixed rl.lr)");
  s->Real("rl.kl_stop", &c->rl.kl_stop, {0.0, false, 10.0, false},
          "PPO epochs: a minibatch whose KL(proximal || current) per action "
          "token exceeds this is not stepped and ends the update (0: off)");
  s->Real("rl.lr_min", &c->rl.lr_min, {0.0, true, 1.0, false},
          "lower bound of the adaptive learning rate");
  s->Real("rl.lr_max", &c->rl.lr_max, {0.0, true, 1.0, false},
          "upper bound of the adaptive learning rate");
  s->Real("rl.lr_adapt_factor", &c->rl.lr_adapt_factor,
          {1.0, true, 100.0, false},
          "the adaptive learning rate's multiplicative step");
  s->Real("rl.init_action_temperature", &c->rl.init_action_temperature,
          {0.0, false, 100.0, false},
          "sampling temperature every action dimension starts RL with "
          "(replaces the checkpoint's learned ones; 0: keep them)");
}

// rl.*: how far rollout runs ahead, how long the run lasts, what it records.
void DescribeRlRun(Config* c, ConfigSchema* s) {
  s->Int("rl.max_policy_lag", &c->rl.max_policy_lag, {0, 1000},
         "versions rollout may run ahead of the learner");
  s->Real("rl.starved_after_s", &c->rl.starved_after_s,
          {0.0, false, 1e6, false},
          "seconds a learner with no segment and nothing to train waits "
          "before it asks the rollout workers to admit one more quota of "
          "units each (units lost on the way: a broken stream, dropped "
          "versions; 0: never)");
  s->Int("rl.execute_steps", &c->rl.execute_steps, {1, 64},
         "chunk steps executed per decision");
  s->Int("rl.grpo_group_size", &c->rl.grpo_group_size, {2, 1024},
         "episodes per initial state (GRPO)");
  s->Int("rl.init_state_first", &c->rl.init_state_first, {0, 1000000},
         "first initial state training draws from");
  s->Int("rl.init_states", &c->rl.init_states, {1, 1000000},
         "initial states training draws from (eval's default --first-init "
         "is the one after them)");
  s->Bool("rl.bootstrap_truncation", &c->rl.bootstrap_truncation,
          "PPO: bootstrap V(final observation) where the time limit ends "
          "an episode (false: treat it as termination)");
  s->Real("rl.duration_s", &c->rl.duration_s, {0.0, true, 1e7, false},
          "run length in seconds");
  s->Int("rl.max_steps", &c->rl.max_steps, {0, 1000000000},
         "stop after this many updates (versions, one per global batch; "
         "0: off)");
  s->Int("rl.checkpoint_every", &c->rl.checkpoint_every, {0, 1000000000},
         "versions between checkpoints (0: by time only)");
  s->Real("rl.checkpoint_every_s", &c->rl.checkpoint_every_s,
          {0.0, false, 1e7, false},
          "seconds between checkpoints (0: by versions only; both 0: only "
          "at the end)");
  s->Int("rl.keep_checkpoints", &c->rl.keep_checkpoints, {0, 1000000},
         "newest complete checkpoints kept in the run folder (0: all)");
  s->String("rl.resume", &c->rl.resume,
            "auto: resume from the run folder's newest complete checkpoint; "
            "never: start fresh (the folder's checkpoints are removed); or "
            "a checkpoint folder");
  s->String("rl.init_checkpoint", &c->rl.init_checkpoint,
            "start from this checkpoint folder");
  s->Int("rl.success_window", &c->rl.success_window, {1, 1000000},
         "episodes in the rolling success rate");
  s->Bool("rl.timeline", &c->rl.timeline, "record per-stage intervals");
}

}  // namespace rlvla3::config_internal
