// Fuzzes a policy's declared interface (policies/policy_interface.h), the
// JSON an interface() method or a <stem>.interface.json holds. Properties:
// never crashes; a refusal is INVALID_ARGUMENT naming the origin; an
// accepted declaration validates, and writes back to JSON that parses to
// the same JSON.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "policies/policy_interface.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<rlvla3::PolicyInterface> p =
      rlvla3::ParsePolicyInterface(text, "fuzz.json");
  if (!p.ok()) {
    if (p.status().code() != absl::StatusCode::kInvalidArgument) std::abort();
    if (p.status().message().rfind("fuzz.json: ", 0) != 0) std::abort();
    return 0;
  }
  if (!rlvla3::ValidatePolicyInterface(*p, "fuzz.json").ok()) std::abort();
  const std::string printed = rlvla3::PolicyInterfaceJson(*p);
  absl::StatusOr<rlvla3::PolicyInterface> back =
      rlvla3::ParsePolicyInterface(printed, "printed.json");
  if (!back.ok() || rlvla3::PolicyInterfaceJson(*back) != printed) {
    std::abort();
  }
  return 0;
}
