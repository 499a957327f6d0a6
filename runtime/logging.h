// File: runtime/logging.h
// -----------------------------------------------------------------------------
// One place that configures spdlog for the whole process: level from config,
// messages to stderr so stdout stays for a verb's results.
//
// Example:
//   InitLogging("info");
//   spdlog::info("env pool: {} envs on {} threads", n, m);
// -----------------------------------------------------------------------------
#ifndef RLVLA3_RUNTIME_LOGGING_H_
#define RLVLA3_RUNTIME_LOGGING_H_

#include <string>

namespace rlvla3 {

// Sets the default logger to a colour stderr sink at `level`
// (trace/debug/info/warn/error; anything else means info).
void InitLogging(const std::string& level);

}  // namespace rlvla3

#endif  // RLVLA3_RUNTIME_LOGGING_H_
