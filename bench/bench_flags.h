// File: bench/bench_flags.h
// -----------------------------------------------------------------------------
// What the plain benchmark executables share besides staged_batch.h: the
// TinyVLA sizes docs/gpu.md documents, and a comma-separated list flag.
//
// Example:
//   std::vector<int> sizes;
//   if (!ParseIntList("1,25,100", &sizes)) return 2;
//   TinyVLAPolicy policy(TinyVLA(DocumentedSize(sizes[0])), 0);
// -----------------------------------------------------------------------------
#ifndef RLVLA3_BENCH_BENCH_FLAGS_H_
#define RLVLA3_BENCH_BENCH_FLAGS_H_

#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "bench/staged_batch.h"
#include "policies/tiny_vla.h"

namespace rlvla3 {

// docs/gpu.md's sizes: 1.44 M, 29.6 M (trunk 25 M), 106 M (trunk 99 M).
inline TinyVLAOptions DocumentedSize(int millions) {
  TinyVLAOptions o = TinyVLAOptions().vocab_size(64).max_text_len(kBenchText);
  if (millions >= 100) return o.d_model(768).heads(12).layers(14);
  if (millions >= 25) return o.d_model(512).heads(8).layers(8);
  return o;
}

// "8,64,256" into positive integers; false if any is not one.
inline bool ParseIntList(const std::string& s, std::vector<int>* out) {
  out->clear();
  for (absl::string_view p : absl::StrSplit(s, ',')) {
    int v = 0;
    if (!absl::SimpleAtoi(p, &v) || v <= 0) return false;
    out->push_back(v);
  }
  return !out->empty();
}

}  // namespace rlvla3

#endif  // RLVLA3_BENCH_BENCH_FLAGS_H_
