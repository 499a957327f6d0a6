// File: runtime/logging.h
// -----------------------------------------------------------------------------
// One place that configures spdlog for the whole process: level and format
// from config, messages to stderr so stdout stays for a verb's results.
// Format "json" writes one object per line for a cluster's log collector:
//   {"ts":"2026-11-26T23:59:01.123Z","level":"info","msg":"learner: ..."}
//
// Example:
//   InitLogging("info", "text");
//   spdlog::info("env pool: {} envs on {} threads", n, m);
// -----------------------------------------------------------------------------
#ifndef RLVLA3_RUNTIME_LOGGING_H_
#define RLVLA3_RUNTIME_LOGGING_H_

#include <string>

namespace rlvla3 {

// Sets the default logger to a stderr sink at `level`
// (trace/debug/info/warn/error; anything else means info) writing `format`
// lines: "text" (coloured on a terminal) or "json".
void InitLogging(const std::string& level, const std::string& format = "text");

// `text` as a JSON string literal, quotes included.
std::string JsonQuoted(const std::string& text);

}  // namespace rlvla3

#endif  // RLVLA3_RUNTIME_LOGGING_H_
