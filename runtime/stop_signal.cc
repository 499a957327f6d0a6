#include "runtime/stop_signal.h"

#include <signal.h>

#include <atomic>

namespace rlvla3 {
namespace {

std::atomic<bool> g_stop_requested{false};

extern "C" void SetStopFlag(int) { g_stop_requested.store(true); }

}  // namespace

void InstallStopSignalHandlers() {
  struct sigaction sa = {};
  sa.sa_handler = SetStopFlag;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

bool StopSignalled() { return g_stop_requested.load(); }

}  // namespace rlvla3
