// File: envs/demos/isolated_read.h
// -----------------------------------------------------------------------------
// ReadLiberoHdf5 behind a process boundary, for files a user hands a run.
// HDF5 1.10 (Debian's) trusts lengths inside a file it parses: a 17 KiB
// demo file whose global heap names a 2^52-byte string segfaults inside
// H5Aread (found by demo_file_fuzz; tests/fuzz/corpus/demo_file). No check
// before the call can see it, so the file is first read whole by a forked
// child that only reads, reports its Status through a pipe and exits; the
// file is read here only if the child read it cleanly. A child that dies by
// a signal, or does not finish in time (HDF5 looping), makes the file
// refused, naming it; nothing of it is used. The cost: the file is read
// twice (the child's pages are copy-on-write, freed when it exits).
//
// Example:
//   absl::StatusOr<DemoRecording> r = ReadLiberoHdf5Isolated("demo.hdf5");
//   if (!r.ok()) return r.status();   // INVALID_ARGUMENT naming the file
// -----------------------------------------------------------------------------
#ifndef RLVLA3_ENVS_DEMOS_ISOLATED_READ_H_
#define RLVLA3_ENVS_DEMOS_ISOLATED_READ_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "envs/demos/libero_file.h"

namespace rlvla3 {

// How long the child may read: `base` plus the file's size at `min_rate`
// bytes per second (a healthy read runs far faster).
struct IsolatedReadOptions {
  absl::Duration base = absl::Seconds(60);
  double min_rate = 10e6;
};

absl::StatusOr<DemoRecording> ReadLiberoHdf5Isolated(
    const std::string& path, const DemoReadOptions& options = {},
    const IsolatedReadOptions& isolation = {});

}  // namespace rlvla3

#endif  // RLVLA3_ENVS_DEMOS_ISOLATED_READ_H_
