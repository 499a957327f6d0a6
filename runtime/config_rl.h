// File: runtime/config_rl.h
// -----------------------------------------------------------------------------
// The rl.* part of the config's schema, kept apart from runtime/config.cc:
// DescribeConfig calls these three in this order (the order of rl.* keys in
// every config.yaml a run writes). Internal to the runtime library.
//
// Example (runtime/config.cc):
//   config_internal::DescribeRlBatch(c, s);
//   config_internal::DescribeRlOptimizer(c, s);
//   config_internal::DescribeRlRun(c, s);
// -----------------------------------------------------------------------------
#ifndef RLVLA3_RUNTIME_CONFIG_RL_H_
#define RLVLA3_RUNTIME_CONFIG_RL_H_

#include "runtime/config.h"
#include "runtime/config_schema.h"

namespace rlvla3::config_internal {

// rl.*: what one global batch holds and how an update cuts it.
void DescribeRlBatch(Config* c, ConfigSchema* s);
// rl.*: the optimizer, the loss's terms and the step size.
void DescribeRlOptimizer(Config* c, ConfigSchema* s);
// rl.*: how far rollout runs ahead, how long the run lasts, what it records.
void DescribeRlRun(Config* c, ConfigSchema* s);

}  // namespace rlvla3::config_internal

#endif  // RLVLA3_RUNTIME_CONFIG_RL_H_
