// File: runtime/torch_status.h
// -----------------------------------------------------------------------------
// LibTorch reports errors by throwing c10::Error. A role converts them into
// its absl::Status here, at its thread's boundary, so that a LibTorch error
// ends the role with a one-line error naming where (LibTorch's message without
// its C++ backtrace), never as an exception. Include it from .cc files only.
//
// Example:
//   supervisor.Spawn("learner", [this] {
//     return TorchBoundary("learner", [this] { return Loop(); });
//   });
// -----------------------------------------------------------------------------
#ifndef RLVLA3_RUNTIME_TORCH_STATUS_H_
#define RLVLA3_RUNTIME_TORCH_STATUS_H_

#include <c10/util/Exception.h>

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace rlvla3 {

// Runs `body` (returning absl::Status); a c10::Error it throws becomes an
// InternalError "`where`: libtorch: MESSAGE".
template <typename Body>
absl::Status TorchBoundary(const char* where, Body&& body) {
  try {
    return std::forward<Body>(body)();
  } catch (const c10::Error& e) {
    std::string message = e.what_without_backtrace();
    if (const size_t nl = message.find('\n'); nl != std::string::npos) {
      message.resize(nl);
    }
    return absl::InternalError(absl::StrCat(where, ": libtorch: ", message));
  }
}

}  // namespace rlvla3

#endif  // RLVLA3_RUNTIME_TORCH_STATUS_H_
