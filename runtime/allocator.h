// Which heap allocator this process runs on, for headers of benchmarks and
// runs (figures depend on it: see cmake/RlVla3Allocator.cmake).
//
//   std::printf("allocator: %s\n", rlvla3::AllocatorInUse().c_str());
//   // -> "allocator: tcmalloc (gperftools 2.10)"
//
// It reports what is loaded, not what was asked for: a binary started with
// LD_PRELOAD=libjemalloc.so.2 reports jemalloc.
#pragma once

#include <string>

namespace rlvla3 {

// Named after the library that defines malloc for this process:
// "tcmalloc (gperftools X)", "jemalloc (X)", "mimalloc (N)",
// "glibc malloc (X)", or "malloc from <file>" (e.g. a sanitizer runtime).
std::string AllocatorInUse();

}  // namespace rlvla3
