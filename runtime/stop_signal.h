// File: runtime/stop_signal.h
// -----------------------------------------------------------------------------
// The process's stop request: SIGINT or SIGTERM sets one flag, which every
// verb polls (the engine through EngineHooks::should_stop, the serve and
// cluster loops directly). A signal handler can reach only a global, so this
// is the process's one piece of global state; it lives here, on the ground
// floor, so that no verb includes another verb to read it.
//
// Example:
//   InstallStopSignalHandlers();          // once, in the verb, at start
//   while (!StopSignalled()) { ... }      // Ctrl-C ends the loop
// -----------------------------------------------------------------------------
#ifndef RLVLA3_RUNTIME_STOP_SIGNAL_H_
#define RLVLA3_RUNTIME_STOP_SIGNAL_H_

namespace rlvla3 {

// Installs SIGINT/SIGTERM handlers that set the stop flag.
void InstallStopSignalHandlers();
// A SIGINT/SIGTERM has arrived since the handlers were installed.
bool StopSignalled();

}  // namespace rlvla3

#endif  // RLVLA3_RUNTIME_STOP_SIGNAL_H_
