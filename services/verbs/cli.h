// File: services/verbs/cli.h
// -----------------------------------------------------------------------------
// The `rl-vla3` command line: parses the verb and its flags and wires the
// libraries together. Exit codes: 0 success, 1 runtime failure, 2 bad usage or
// bad config (one line naming file, key, value and what was expected).
//
// Example:
//   rl-vla3 config --config configs/selfcheck.yaml --set batcher.max_batch=64
//   rl-vla3 selfcheck --config configs/selfcheck.yaml
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_VERBS_CLI_H_
#define RLVLA3_SERVICES_VERBS_CLI_H_

#include <string>
#include <vector>

namespace rlvla3 {

// Runs the CLI on `args` (without the program name); returns the exit code.
int RunCli(const std::vector<std::string>& args);

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_VERBS_CLI_H_
