// File: runtime/thread_priority.h
// -----------------------------------------------------------------------------
// Per-thread CPU priority. On a shared CPU the stages on the latency-critical
// path (env workers, inference actors) should preempt the one that is not
// (the learner, whose lead is bounded by admission control anyway); Linux
// applies a nice value to a single thread when given its thread id.
//
// Example:
//   if (absl::Status s = SetCurrentThreadNice(10); !s.ok())
//     spdlog::warn("{}", s.message());
// -----------------------------------------------------------------------------
#ifndef RLVLA3_RUNTIME_THREAD_PRIORITY_H_
#define RLVLA3_RUNTIME_THREAD_PRIORITY_H_

#include "absl/status/status.h"

namespace rlvla3 {

// Sets the calling thread's nice value (0..19: higher runs less often when
// cores are contended). Other threads keep theirs.
absl::Status SetCurrentThreadNice(int nice);

// The calling thread's nice value.
int CurrentThreadNice();

}  // namespace rlvla3

#endif  // RLVLA3_RUNTIME_THREAD_PRIORITY_H_
