// The process's LibTorch thread pools, sized once from the config's threads.*
// keys when a verb starts, and nowhere else (libraries never resize them).
//
//   if (absl::Status s = ApplyThreadBudget(config.threads); !s.ok()) ...
//
// Inter-op threads can only be set before LibTorch's inter-op pool starts,
// so this runs before any model is built.
#pragma once

#include "absl/status/status.h"
#include "runtime/config.h"

namespace rlvla3 {

absl::Status ApplyThreadBudget(const ThreadsConfig& threads);

}  // namespace rlvla3
