// Fuzzes the stage-cost profile `rl-vla3 plan` reads
// (services/plan/stage_costs.h), the JSON `bench --stage-costs` writes.
// Properties: never crashes; a refusal is INVALID_ARGUMENT naming the origin;
// an accepted profile's fits are finite and not negative, and it writes back
// to JSON that parses to the same JSON.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "services/plan/stage_costs.h"

namespace {

void CheckFit(const rlvla3::LinearFit& f) {
  if (!std::isfinite(f.fixed) || !std::isfinite(f.slope) || f.fixed < 0 ||
      f.slope < 0) {
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<rlvla3::StageCostProfile> p =
      rlvla3::ParseStageCosts(text, "fuzz.json");
  if (!p.ok()) {
    if (p.status().code() != absl::StatusCode::kInvalidArgument) std::abort();
    if (p.status().message().rfind("fuzz.json: ", 0) != 0) std::abort();
    return 0;
  }
  CheckFit(p->inference.Fit());
  CheckFit(p->learner.Fit());
  CheckFit(p->allreduce.Fit());
  const std::string printed = rlvla3::StageCostsJson(*p);
  absl::StatusOr<rlvla3::StageCostProfile> back =
      rlvla3::ParseStageCosts(printed, "printed.json");
  if (!back.ok() || rlvla3::StageCostsJson(*back) != printed) std::abort();
  return 0;
}
