// File: runtime/metrics_writer.h
// -----------------------------------------------------------------------------
// Sinks for MetricsSnapshot: JSON Lines (one object per snapshot), CSV (columns
// fixed by the first snapshot), and the live one-line progress display
// (rewritten in place on a terminal, plain periodic lines otherwise).
//
// Example:
//   auto jsonl = JsonlWriter::Open(run_dir + "/metrics.jsonl");
//   ProgressLine progress(stderr, ProgressLine::Mode::kAuto, absl::Seconds(5));
//   MetricsSnapshot s = metrics.Snapshot();
//   jsonl->Write(s);
//   progress.Update(absl::StrFormat("frames/s %.0f",
//   s.Get("env_frames_per_s"))); progress.Finish();
// -----------------------------------------------------------------------------
#ifndef RLVLA3_RUNTIME_METRICS_WRITER_H_
#define RLVLA3_RUNTIME_METRICS_WRITER_H_

#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "runtime/metrics.h"

namespace rlvla3 {

// Writes {"elapsed_s": ..., "<name>": <value>, ...} per line; non-finite values
// as null.
class JsonlWriter {
 public:
  static absl::StatusOr<std::unique_ptr<JsonlWriter>> Open(
      const std::string& path);
  // Appends one line and flushes it; an error names the file and the reason
  // (e.g. a full disk), and the line is lost.
  absl::Status Write(const MetricsSnapshot& s);

 private:
  JsonlWriter(std::ofstream out, std::string path)
      : out_(std::move(out)), path_(std::move(path)) {}
  std::ofstream out_;
  std::string path_;
};

// Writes a header from the first snapshot's names, then one row per snapshot;
// names that appear later are not added, missing ones are left empty.
class CsvWriter {
 public:
  static absl::StatusOr<std::unique_ptr<CsvWriter>> Open(
      const std::string& path);
  absl::Status Write(const MetricsSnapshot& s);  // as JsonlWriter::Write

 private:
  CsvWriter(std::ofstream out, std::string path)
      : out_(std::move(out)), path_(std::move(path)) {}
  std::ofstream out_;
  std::string path_;
  std::vector<std::string> columns_;
};

// One live status line.
class ProgressLine {
 public:
  enum class Mode {
    kAuto,   // kTty if `out` is a terminal, else kPlain
    kTty,    // rewrite one line in place
    kPlain,  // a full line at most every `plain_period`
    kOff,
  };
  // Parses "auto" / "tty" / "plain" / "off".
  static Mode ParseMode(const std::string& name);

  ProgressLine(std::FILE* out, Mode mode, absl::Duration plain_period);
  // Shows `line` (without newline).
  void Update(const std::string& line);
  // Ends the live line so later output starts on a fresh line.
  void Finish();
  Mode mode() const { return mode_; }

 private:
  std::FILE* out_;
  Mode mode_;
  absl::Duration plain_period_;
  std::chrono::steady_clock::time_point last_plain_{};
  bool printed_plain_ = false;
  bool live_ = false;
};

}  // namespace rlvla3

#endif  // RLVLA3_RUNTIME_METRICS_WRITER_H_
