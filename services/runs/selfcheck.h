// File: services/runs/selfcheck.h
// -----------------------------------------------------------------------------
// The runtime self-check behind `rl-vla3 selfcheck` (and, until the engine
// lands, the README's demo command). It runs level 1 of the pipeline for real:
// `num_envs` producer threads act as simulators, each submitting an
// observation, waiting for its own action and stepping again; inference actors
// form dynamic batches, encode each observation to the wire format and back
// (tensor codec), run a LibTorch MLP policy on the batch and reply per env.
// It then verifies that every observation got exactly one reply and reports
// throughput, batch sizes, queue waits and stage busy time.
//
// Example:
//   absl::StatusOr<SelfCheckReport> r =
//       RunSelfCheck(SelfCheckOptionsFromConfig(config), &metrics);
//   if (r.ok()) std::puts(FormatSelfCheckReport(*r).c_str());
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_RUNS_SELFCHECK_H_
#define RLVLA3_SERVICES_RUNS_SELFCHECK_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "runtime/metrics.h"
#include "services/options/selfcheck_options.h"

namespace rlvla3 {

struct SelfCheckReport {
  int64_t envs = 0;
  int64_t observations = 0;  // submitted by all envs
  int64_t replies = 0;       // delivered back to envs
  int64_t mismatched_replies =
      0;  // replies for the wrong env or step (must be 0)
  double wall_s = 0.0;
  double env_frames_per_s = 0.0;
  double mean_batch = 0.0;
  int64_t max_batch_seen = 0;
  int64_t batcher_max_batch = 0;
  double request_wait_ms_mean = 0.0;  // env submit -> action received, mean
  double request_wait_ms_p99 = 0.0;
  double inference_busy_pct = 0.0;
  double env_busy_pct = 0.0;
  uint64_t codec_bytes = 0;  // bytes round-tripped through the wire codec
  bool ok() const {
    return observations == replies && mismatched_replies == 0 && replies > 0;
  }
};

// Runs the self-check. Metrics go to `metrics`; `on_tick` is called about
// every options.tick_s with a fresh snapshot (for a progress line), may be
// empty.
absl::StatusOr<SelfCheckReport> RunSelfCheck(
    const SelfCheckOptions& options, MetricsRegistry* metrics,
    const std::function<void(const MetricsSnapshot&)>& on_tick = {});

// A short human-readable summary, several lines.
std::string FormatSelfCheckReport(const SelfCheckReport& r);

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_RUNS_SELFCHECK_H_
