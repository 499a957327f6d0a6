// Files whose failures are reported, never lost: a full disk or a
// missing folder becomes an absl::Status naming the file and the reason.
//
//   if (absl::Status s = WriteTextFile(dir + "/bench.json", json); !s.ok())
//     return s;  // "runs/x/bench.json: write failed: No space left on device"
//
//   out << line;
//   out.flush();
//   return StreamStatus(out, path);  // for files written piece by piece
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace rlvla3 {

// OK, or `path` and errno's reason when a write to `out` has failed.
absl::Status StreamStatus(const std::ostream& out, const std::string& path);

// The whole file at `path`; NOT_FOUND naming it and errno's reason.
absl::StatusOr<std::string> ReadTextFile(const std::string& path);

// OK if `path` is a regular file (after links) of at most `max_bytes`;
// INVALID_ARGUMENT naming it otherwise (a folder, a device such as
// /dev/zero, a file too large to be what it claims), before a byte is read.
absl::Status CheckRegularFile(const std::string& path, uint64_t max_bytes);

// The whole file at `path`, checked first as CheckRegularFile.
absl::StatusOr<std::string> ReadBoundedFile(const std::string& path,
                                            uint64_t max_bytes);

// Writes `text` to `path`, replacing it, and flushes it.
absl::Status WriteTextFile(const std::string& path, const std::string& text);

}  // namespace rlvla3
