// File: services/options/config_bridge.h
// -----------------------------------------------------------------------------
// Turns the typed run config into the option structs of the libraries it
// configures, in one place, so every verb builds them the same way.
//
// Example:
//   EnvOptions env = EnvOptionsFromConfig(config);
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_OPTIONS_CONFIG_BRIDGE_H_
#define RLVLA3_SERVICES_OPTIONS_CONFIG_BRIDGE_H_

#include <algorithm>

#include "envs/env_pool.h"
#include "envs/manipulation_env.h"
#include "policies/tiny_vla.h"
#include "runtime/config.h"

namespace rlvla3 {

// env.* keys -> EnvOptions (rendering on).
inline EnvOptions EnvOptionsFromConfig(const Config& c) {
  EnvOptions o;
  o.image_width = static_cast<int>(c.env.image_width);
  o.image_height = static_cast<int>(c.env.image_height);
  o.cameras = EnvCameras(c.env);
  o.shaped_reward = c.env.shaped_reward;
  o.progress_reward = c.env.progress_reward;
  o.max_episode_steps = static_cast<int>(c.env.max_episode_steps);
  // One of kRenderBackendNames (a config choice).
  o.render_backend = kRenderBackendNames.Parse(c.env.render_backend)
                         .value_or(RenderBackend::kAuto);
  return o;
}

// policy.* keys -> TinyVLAOptions, for a tokenizer of `vocab` words.
inline TinyVLAOptions TinyVLAOptionsFromConfig(const Config& c, int64_t vocab) {
  const PolicyConfig& p = c.policy;
  return TinyVLAOptions()
      .vocab_size(vocab)
      .max_text_len(p.max_text_len)
      .d_model(p.d_model)
      .heads(p.heads)
      .layers(p.layers)
      .grid(p.grid)
      .patch(p.patch)
      .stem_channels(p.stem_channels)
      .chunk(p.chunk)
      .value_detach(p.value_detach);
}

// How env.num_envs spread over threads.env_workers: the workers that get
// envs (at most one per env) and the most envs one of them steps.
struct EnvWorkerShare {
  int64_t workers = 1, envs_per_worker = 1;
};
inline EnvWorkerShare EnvWorkerShareOf(const Config& c) {
  EnvWorkerShare s;
  s.workers =
      std::max<int64_t>(1, std::min(c.threads.env_workers, c.env.num_envs));
  s.envs_per_worker = (c.env.num_envs + s.workers - 1) / s.workers;
  return s;
}

// env.* and threads.* keys -> EnvPoolOptions over `tasks`.
inline EnvPoolOptions EnvPoolOptionsFromConfig(
    const Config& c, const std::vector<TaskSpec>& tasks) {
  EnvPoolOptions o;
  o.tasks = tasks;
  o.num_envs = static_cast<int>(c.env.num_envs);
  o.num_threads = static_cast<int>(c.threads.env_workers);
  o.seed = static_cast<uint64_t>(c.run.seed);
  o.env = EnvOptionsFromConfig(c);
  // The pool flushes once per sweep; a config choice (kReadbackNames).
  o.env.readback =
      kReadbackNames.Parse(c.env.readback).value_or(Readback::kAuto);
  o.latency.mean_ms = c.env.latency_mean_ms;
  o.latency.cv = c.env.latency_cv;
  o.lp_num_threads = static_cast<int>(c.threads.lp_num_threads);
  // Checked when the config was loaded.
  o.faults = ParseFaultPlan(c.env.faults).value_or(FaultPlan{});
  o.faults.hang_s = c.env.fault_hang_s;
  o.step_deadline_s = c.env.step_deadline_s;
  const int64_t per_worker = EnvWorkerShareOf(c).envs_per_worker;
  o.max_sweep =
      static_cast<int>((per_worker + c.threads.env_worker_splits - 1) /
                       c.threads.env_worker_splits);
  return o;
}

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_OPTIONS_CONFIG_BRIDGE_H_
