// File: services/options/engine_config.h
// -----------------------------------------------------------------------------
// The config turned into the engine's typed options, once, at the top (the
// `train` and `bench` verbs): each role gets its own options struct and never
// sees the config. Task files are resolved here (the instruction table, the
// longest episode), so the roles below never read a file.
//
// Example:
//   absl::StatusOr<EngineParts> parts = BuildEngineParts(config);
//   absl::StatusOr<LocalEngineOptions> o = LocalEngineOptionsFromConfig(
//       config, *parts);
//   auto engine = LocalEngine::Create(*o, *parts);
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_OPTIONS_ENGINE_CONFIG_H_
#define RLVLA3_SERVICES_OPTIONS_ENGINE_CONFIG_H_

#include "absl/status/statusor.h"
#include "runtime/config.h"
#include "services/engine/local_engine.h"

namespace rlvla3 {

// The network, tokenizer and version a run starts from: rl.init_checkpoint,
// or a fresh TinyVLA from the policy.* keys (seeded by run.seed).
absl::StatusOr<EngineParts> BuildEngineParts(const Config& c);

// The learner's options from the rl.* keys. The caller sets what depends on
// the engine's shape: global_units, max_policy_lag, grpo_group_size.
LearnerOptions LearnerOptionsFromConfig(const RlConfig& rl);

// A ConfigError (the CLI exits 2) naming inference.device or learner.device
// when this machine lacks the GPU it names. Only the roles this process runs
// are checked: a rollout worker on a CPU node shares the GPU job's config.
absl::Status CheckRoleDevices(const Config& c, bool inference, bool learner);

// Every role's options for `c` and the policy in `parts` (its chunk and text
// length); the sync wiring's lag 0 included.
absl::StatusOr<LocalEngineOptions> LocalEngineOptionsFromConfig(
    const Config& c, const EngineParts& parts);

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_OPTIONS_ENGINE_CONFIG_H_
