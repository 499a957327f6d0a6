// File: runtime/fault_plan.h
// -----------------------------------------------------------------------------
// A fault plan: which env misbehaves, how, and at which of its steps, so that
// the paths that handle a crashed, hung or broken simulator are exercised end
// to end (config key env.faults). The env pool injects the faults; this file
// only says what they are.
//
// Spec: comma-separated KIND@ENV:STEP, where ENV is the global env id and STEP
// counts that env's steps from 1 across its episodes. Kinds:
//   throw        the step throws an exception
//   hang         the step stalls env.fault_hang_s seconds (past the deadline)
//   wrong_shape  the observation comes back with half its image bytes
//   nan          the observation's proprio comes back NaN
//
// Example:
//   absl::StatusOr<FaultPlan> p = ParseFaultPlan("throw@1:5,nan@3:12");
//   if (auto k = p->At(/*env=*/1, /*step=*/5)) ...   // *k == FaultKind::kThrow
// -----------------------------------------------------------------------------
#ifndef RLVLA3_RUNTIME_FAULT_PLAN_H_
#define RLVLA3_RUNTIME_FAULT_PLAN_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "runtime/enum_names.h"

namespace rlvla3 {

enum class FaultKind { kThrow, kHang, kWrongShape, kNaN };
inline constexpr EnumNames<FaultKind, 4> kFaultKindNames{
    {{{FaultKind::kThrow, "throw"},
      {FaultKind::kHang, "hang"},
      {FaultKind::kWrongShape, "wrong_shape"},
      {FaultKind::kNaN, "nan"}}}};

const char* FaultKindName(FaultKind k);

struct FaultPlan {
  struct Fault {
    FaultKind kind;
    int env = 0;       // global env id
    int64_t step = 0;  // the env's step count, from 1
  };
  std::vector<Fault> faults;
  double hang_s = 3.0;  // how long a "hang" stalls its step

  bool empty() const { return faults.empty(); }
  // The fault planned for `env`'s `step`-th step, if any.
  std::optional<FaultKind> At(int env, int64_t step) const;
};

// InvalidArgument naming the bad entry and why.
absl::StatusOr<FaultPlan> ParseFaultPlan(absl::string_view spec);

}  // namespace rlvla3

#endif  // RLVLA3_RUNTIME_FAULT_PLAN_H_
