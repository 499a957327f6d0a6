// File: services/plan/plan_report.h
// -----------------------------------------------------------------------------
// What `rl-vla3 plan` prints: the recommended split with its forecast (env
// frames/s, trained samples/s, updates per hour, the lag distribution, each
// stage's busy share and the bottleneck, sync beside async), each pod's
// memory by part, the other splits ranked; and the scale table (the best
// split at each GPU count, its efficiency against the first and where it
// is lost).
//
// Example:
//   std::printf("%s", FormatPlan(inputs, forecasts, *best).c_str());
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_PLAN_PLAN_REPORT_H_
#define RLVLA3_SERVICES_PLAN_PLAN_REPORT_H_

#include <string>
#include <vector>

#include "services/plan/cluster_plan.h"

namespace rlvla3 {

// `label` heads the chosen split ("recommended", "forecast").
std::string FormatPlan(const PlanInputs& in,
                       const std::vector<SplitForecast>& all,
                       const SplitForecast& best,
                       const std::string& label = "recommended");

// One forecast as JSON (both modes: frames/s, samples/s, updates/s, busy
// shares, bottleneck, lag mean and shares, mean batch).
std::string ForecastJson(const SplitForecast& f);

struct ScaleRow {
  int gpus = 0;
  SplitForecast best;
  bool found = false;
};
std::string FormatScaleTable(const std::vector<ScaleRow>& rows);
// One JSON object per line: gpus and the forecast (ForecastJson's fields).
std::string ScaleTableJson(const std::vector<ScaleRow>& rows);

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_PLAN_PLAN_REPORT_H_
