#include "runtime/fault_plan.h"

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace rlvla3 {

const char* FaultKindName(FaultKind k) { return kFaultKindNames.Name(k); }

std::optional<FaultKind> FaultPlan::At(int env, int64_t step) const {
  for (const Fault& f : faults) {
    if (f.env == env && f.step == step) return f.kind;
  }
  return std::nullopt;
}

absl::StatusOr<FaultPlan> ParseFaultPlan(absl::string_view spec) {
  FaultPlan plan;
  for (absl::string_view entry :
       absl::StrSplit(spec, ',', absl::SkipWhitespace())) {
    entry = absl::StripAsciiWhitespace(entry);
    auto bad = [&](absl::string_view why) {
      return absl::InvalidArgumentError(
          absl::StrCat("\"", entry, "\": ", why,
                       " (KIND is one of throw, hang, wrong_shape, nan)"));
    };
    const size_t at = entry.find('@');
    const size_t colon = entry.find(':', at == entry.npos ? 0 : at);
    if (at == entry.npos || colon == entry.npos) return bad("malformed");
    const absl::string_view kind = entry.substr(0, at);
    FaultPlan::Fault f;
    const std::optional<FaultKind> parsed = kFaultKindNames.Parse(kind);
    if (!parsed.has_value()) {
      return bad(absl::StrCat("unknown kind \"", kind, "\""));
    }
    f.kind = *parsed;
    if (!absl::SimpleAtoi(entry.substr(at + 1, colon - at - 1), &f.env) ||
        f.env < 0) {
      return bad("ENV must be an env id >= 0");
    }
    if (!absl::SimpleAtoi(entry.substr(colon + 1), &f.step) || f.step < 1) {
      return bad("STEP must be >= 1");
    }
    plan.faults.push_back(f);
  }
  return plan;
}

}  // namespace rlvla3
