// File: services/options/interface_fit.h
// -----------------------------------------------------------------------------
// A run's config against the interface its policy declares
// (policies/policy_interface.h): from a TorchScript policy's declaration
// (policy.path) or a checkpoint's context.json. Like a checkpoint's record
// (checkpoint_fit.h), the declaration takes the place of keys the config
// did not give (env.cameras and env.image_width / _height from its cameras,
// policy.chunk, policy.max_text_len), and a given key that contradicts it is a
// config error naming both sides (the CLI exits 2). What the envs cannot give
// the policy (cameras of different sizes, another proprio or action size) is a
// config error naming the declaration's field and what the envs give:
// never a silent resize.
//
// Example:
//   absl::Status s = FitConfigToPolicy(&c);  // policy.kind=torchscript
//   if (IsConfigError(s)) return 2;
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_OPTIONS_INTERFACE_FIT_H_
#define RLVLA3_SERVICES_OPTIONS_INTERFACE_FIT_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "policies/policy_interface.h"
#include "runtime/config.h"

namespace rlvla3 {

// Fits `*c` to `p`, declared at `origin` (a file, or a file and method).
absl::Status FitConfigToInterface(const PolicyInterface& p,
                                  const std::string& origin, Config* c);

// TinyVLA and undeclared TorchScript modules read agentview then wrist:
// env.cameras must name those (a config error naming the key otherwise).
absl::Status FitConfigToUndeclared(const Config& c);
std::vector<std::string> UndeclaredPolicyCameras();
// The cameras `p` declares, by name, in its order.
std::vector<std::string> DeclaredCameraNames(const PolicyInterface& p);

// The declaration of c->policy.path for a TorchScript policy (nothing to
// do for TinyVLA or an undeclared module), fitted as above. A module that
// does not load is left to the run, which says why.
absl::Status FitConfigToPolicy(Config* c);

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_OPTIONS_INTERFACE_FIT_H_
