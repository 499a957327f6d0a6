#include "envs/mujoco_errors.h"

#include <mujoco/mujoco.h>

#include "spdlog/spdlog.h"

namespace rlvla3 {
namespace {

// MuJoCo's engine is C built with unwind tables (.eh_frame), as its own XML
// compiler relies on when it throws from this hook; an mjData an error
// interrupted is only reset afterwards (the env worker resets the env).
void ThrowMujocoError(const char* msg) {
  throw MujocoError(msg == nullptr ? "unknown error" : msg);
}

void LogMujocoWarning(const char* msg) {
  spdlog::warn("MuJoCo: {}", msg == nullptr ? "" : msg);
}

}  // namespace

void InstallMujocoErrorHandlers() {
  mju_user_error = ThrowMujocoError;
  mju_user_warning = LogMujocoWarning;
}

}  // namespace rlvla3
