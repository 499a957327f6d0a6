// rl-vla3: the single executable; the verbs are in services/verbs/ (cli.cc).
#include <grpc/grpc.h>
#include <spdlog/spdlog.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/debugging/failure_signal_handler.h"
#include "absl/debugging/symbolize.h"
#include "services/verbs/cli.h"

int main(int argc, char** argv) {
  // A crash (SIGSEGV, SIGABRT, ...) prints the faulting thread's stack to
  // stderr, so a role's log says where it died. SIGTERM is not a crash: it
  // ends a verb quietly, or stops it cleanly where the verb installs its
  // stop handlers (runtime/stop_signal.h).
  absl::InitializeSymbolizer(argv[0]);
  absl::InstallFailureSignalHandler(absl::FailureSignalHandlerOptions());
  std::signal(SIGTERM, SIG_DFL);
  // main holds gRPC's library for the whole run, so its final shutdown runs
  // here, on this thread (released last on one of gRPC's own threads, it
  // would run on a detached one).
  grpc_init();
  const int code =
      rlvla3::RunCli(std::vector<std::string>(argv + 1, argv + argc));
  grpc_shutdown();
  // Every object of the run is gone; the libraries' own threads (gRPC's,
  // LibTorch's pools, Mesa's) may still be ending. exit() would run static
  // destructors under them: a role stopped by SIGTERM died with SIGSEGV in
  // about one stop in twenty (LibTorch's operator registry torn down while a
  // thread freed its tcmalloc cache). So: flush what was written, and end.
  spdlog::shutdown();
  std::fflush(nullptr);
  std::_Exit(code);
}
