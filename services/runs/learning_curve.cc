#include "services/runs/learning_curve.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace rlvla3 {
namespace {

// The step that published `version` (its trained samples and time), or the
// run's start for the version it began with.
const LocalEngine::LearningPoint* PublishedAt(
    const std::vector<LocalEngine::LearningPoint>& steps, uint64_t version) {
  auto it = std::lower_bound(steps.begin(), steps.end(), version,
                             [](const LocalEngine::LearningPoint& p,
                                uint64_t v) { return p.version < v; });
  if (it == steps.end() || it->version != version) return nullptr;
  return &*it;
}

}  // namespace

std::vector<CurvePoint> LearningCurveByVersion(
    const std::vector<EpisodeRecord>& episodes,
    const std::vector<LocalEngine::LearningPoint>& steps, int buckets) {
  std::vector<CurvePoint> out;
  for (const SuccessBucket& b : SuccessByStartVersion(episodes, buckets)) {
    CurvePoint p;
    p.version_lo = b.version_lo;
    p.version_hi = b.version_hi;
    out.push_back(p);
  }
  if (out.empty()) return out;
  for (const EpisodeRecord& e : episodes) {
    if (e.late) continue;
    auto it = std::find_if(out.begin(), out.end(), [&](const CurvePoint& p) {
      return e.start_version >= p.version_lo && e.start_version <= p.version_hi;
    });
    if (it == out.end()) continue;
    ++it->episodes;
    it->successes += e.success ? 1 : 0;
    if (const auto* at = PublishedAt(steps, e.start_version)) {
      it->trained_samples += static_cast<double>(at->trained_samples);
      it->wall_s += at->t_s;
    }
  }
  for (CurvePoint& p : out) {
    if (p.episodes == 0) continue;
    p.trained_samples /= static_cast<double>(p.episodes);
    p.wall_s /= static_cast<double>(p.episodes);
  }
  return out;
}

std::string FormatLearningCurve(const std::vector<CurvePoint>& points) {
  std::string s;
  for (const CurvePoint& p : points) {
    absl::StrAppendFormat(&s, "%s v%d-%d @%.0f samples %.0f s: %.0f%% (%d)",
                          s.empty() ? "" : " |", p.version_lo, p.version_hi,
                          p.trained_samples, p.wall_s, 100 * p.rate(),
                          p.episodes);
  }
  return s.empty() ? " n/a" : s;
}

std::string LearningCurveJson(
    const std::string& mode, const std::vector<EpisodeRecord>& episodes,
    const std::vector<LocalEngine::LearningPoint>& steps, int buckets) {
  std::string s = absl::StrFormat("{\"mode\": \"%s\", \"steps\": [", mode);
  for (size_t i = 0; i < steps.size(); ++i) {
    const LocalEngine::LearningPoint& p = steps[i];
    absl::StrAppendFormat(&s, "%s[%d, %.3f, %d, %.4f, %d]", i ? ", " : "",
                          p.trained_samples, p.t_s, p.version,
                          p.rolling_success, p.episodes);
  }
  s += "], \"by_version\": [";
  bool first = true;
  for (const CurvePoint& p : LearningCurveByVersion(episodes, steps, buckets)) {
    absl::StrAppendFormat(
        &s,
        "%s{\"versions\": [%d, %d], \"trained_samples\": %.1f, "
        "\"wall_s\": %.2f, \"success\": %.4f, \"episodes\": %d}",
        first ? "" : ", ", p.version_lo, p.version_hi, p.trained_samples,
        p.wall_s, p.rate(), p.episodes);
    first = false;
  }
  return s + "]}\n";
}

Series TrainedSamplesRate(const std::vector<LocalEngine::LearningPoint>& steps,
                          double window_s, const std::string& name) {
  Series s{name, {}, {}};
  size_t j = 0;
  for (size_t i = 1; i < steps.size(); ++i) {
    while (j + 1 < i && steps[i].t_s - steps[j + 1].t_s >= window_s) ++j;
    const double dt = steps[i].t_s - steps[j].t_s;
    if (dt <= 0) continue;
    s.x.push_back(steps[i].t_s);
    s.y.push_back(static_cast<double>(steps[i].trained_samples -
                                      steps[j].trained_samples) /
                  dt);
  }
  return s;
}

}  // namespace rlvla3
