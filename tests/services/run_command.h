// A shell command line run to its end: stdout and stderr together, and its
// exit code (-1 when it did not exit normally). For tests of the CLI.
//
//   testutil::CommandResult r = testutil::RunCommand(binary + " config");
//   EXPECT_EQ(r.exit_code, 0) << r.output;
#pragma once

#include <stdio.h>
#include <sys/wait.h>

#include <array>
#include <string>

namespace rlvla3::testutil {

struct CommandResult {
  int exit_code;
  std::string output;  // stdout and stderr together
};

inline CommandResult RunCommand(const std::string& command) {
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  CommandResult r{-1, ""};
  if (p == nullptr) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0)
    r.output.append(buf.data(), n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace rlvla3::testutil
