// File: envs/mujoco_errors.h
// -----------------------------------------------------------------------------
// MuJoCo's fatal errors as C++ exceptions. MuJoCo 2.2.2 reports an error it
// cannot return (an allocation that failed in mj_makeData, a stack overflow
// inside mj_step) through the process-wide hook mju_user_error; left unset, it
// prints "Press Enter to exit ..." and calls exit(1). A host that would rather
// survive (the Python module: an exception the caller can catch) installs
// these handlers once, at its top: errors throw MujocoError, which the env
// worker turns into a counted env fault and the binding into a Python
// exception; warnings go to the log instead of MUJOCO_LOG.TXT in the cwd.
//
// Example (once, where the process starts):
//   InstallMujocoErrorHandlers();
//   ...
//   try { mj_step(m, d); } catch (const MujocoError& e) { /* reset the env */ }
// -----------------------------------------------------------------------------
#ifndef RLVLA3_ENVS_MUJOCO_ERRORS_H_
#define RLVLA3_ENVS_MUJOCO_ERRORS_H_

#include <stdexcept>
#include <string>

namespace rlvla3 {

// A MuJoCo fatal error, with MuJoCo's message.
class MujocoError : public std::runtime_error {
 public:
  explicit MujocoError(const std::string& message)
      : std::runtime_error("MuJoCo: " + message) {}
};

// Sets mju_user_error (throws MujocoError) and mju_user_warning (logs).
// Process-wide by MuJoCo's design: call it from a main or a module's init,
// never from a library.
void InstallMujocoErrorHandlers();

}  // namespace rlvla3

#endif  // RLVLA3_ENVS_MUJOCO_ERRORS_H_
