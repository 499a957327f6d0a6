// File: services/options/run_settings.h
// -----------------------------------------------------------------------------
// The run as a rollout worker sees it over the wire, from the options the
// config became: what Learner.GetRunSettings answers, and the ranges the
// learner checks every incoming segment against. Both come from the same
// options, so what a client is told is what it is held to.
//
// Example:
//   RunLayout layout{/*workers=*/2, /*route_block=*/1, /*learner_ranks=*/1};
//   v1::RunSettings settings;
//   FillRunSettings(engine_options, layout, &settings);
//   SegmentLimits limits = SegmentLimitsOf(engine_options, layout);
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_OPTIONS_RUN_SETTINGS_H_
#define RLVLA3_SERVICES_OPTIONS_RUN_SETTINGS_H_

#include "services/engine/local_engine.h"
#include "services/net/wire_format.h"

namespace rlvla3 {
namespace v1 {
class RunSettings;
}  // namespace v1

// How the run spreads over processes (what one process's options lack).
struct RunLayout {
  int workers = 1;        // rollout processes, env.num_envs envs each
  int route_block = 1;    // envs routed to one learner rank together
  int learner_ranks = 1;  // data-parallel learner processes
};

// Global env ids are [0, workers x envs per worker).
int GlobalEnvs(const LocalEngineOptions& o, const RunLayout& layout);
void FillRunSettings(const LocalEngineOptions& o, const RunLayout& layout,
                     v1::RunSettings* out);
SegmentLimits SegmentLimitsOf(const LocalEngineOptions& o,
                              const RunLayout& layout);

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_OPTIONS_RUN_SETTINGS_H_
