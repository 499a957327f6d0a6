// The main() of the Google Benchmark binaries: BENCHMARK_MAIN, plus the heap
// allocator in the context header, since the figures depend on it
// (cmake/RlVla3Allocator.cmake).
#include <benchmark/benchmark.h>

#include "runtime/allocator.h"

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::AddCustomContext("allocator", rlvla3::AllocatorInUse());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
