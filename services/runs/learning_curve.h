// File: services/runs/learning_curve.h
// -----------------------------------------------------------------------------
// A run's learning curve as users read it: the episodes grouped by the policy
// version that started them (so no episode is credited to weights it never
// saw), each group placed at the trained samples and the wall time at which
// its versions were current, with the number of episodes behind it; and the
// trained samples/s over windows of whole optimizer steps (a 2 s metrics
// window holds 0, 1 or 2 steps and zig-zags).
//
// Example:
//   for (const CurvePoint& p : LearningCurveByVersion(eps, curve, 4))
//     printf("%.0f samples %.0f s: %.0f%% of %lld\n", p.trained_samples,
//            p.wall_s, 100 * p.rate(), p.episodes);
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_RUNS_LEARNING_CURVE_H_
#define RLVLA3_SERVICES_RUNS_LEARNING_CURVE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/report_html.h"
#include "services/engine/local_engine.h"

namespace rlvla3 {

// The version ranges learning_curve.json splits a run into.
inline constexpr int kLearningCurveJsonBuckets = 12;

struct CurvePoint {
  uint64_t version_lo = 0, version_hi = 0;  // inclusive
  int64_t episodes = 0, successes = 0;
  // Means over the group's episodes of the trained samples and seconds into
  // the run at which their starting version was published.
  double trained_samples = 0, wall_s = 0;
  double rate() const { return episodes ? double(successes) / episodes : 0; }
};

// `buckets` equal version ranges (late episodes left out, as
// SuccessByStartVersion does); `steps` is the run's per-step curve.
std::vector<CurvePoint> LearningCurveByVersion(
    const std::vector<EpisodeRecord>& episodes,
    const std::vector<LocalEngine::LearningPoint>& steps, int buckets);

// " v0-7 @0 samples 0 s: 35% (346) | ..." (" n/a" without episodes).
std::string FormatLearningCurve(const std::vector<CurvePoint>& points);

// The curve as JSON (learning_curve.json in a train run's folder, for
// scripts/plot_learning.py): {"mode", "steps": [[trained samples, seconds,
// version, rolling success, episodes], ...], "by_version": [{"versions",
// "trained_samples", "wall_s", "success", "episodes"}, ...]}.
std::string LearningCurveJson(
    const std::string& mode, const std::vector<EpisodeRecord>& episodes,
    const std::vector<LocalEngine::LearningPoint>& steps, int buckets);

// Trained samples/s after each optimizer step, over the steps of the last
// `window_s` seconds (at least two steps): x = seconds into the run.
Series TrainedSamplesRate(const std::vector<LocalEngine::LearningPoint>& steps,
                          double window_s, const std::string& name);

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_RUNS_LEARNING_CURVE_H_
