// File: runtime/tfevents_writer.h
// -----------------------------------------------------------------------------
// TensorBoard event files without TensorFlow: TFRecord framing (length,
// masked CRC-32C of the length, the serialised tensorboard.Event, masked
// CRC-32C of the data) around hand-encoded Event protos holding scalar
// summaries. The file is named events.out.tfevents.<unix time>.<host> so
// `tensorboard --logdir <run folder>` finds it.
//
// Example:
//   absl::StatusOr<std::unique_ptr<TfEventsWriter>> w =
//       TfEventsWriter::Open(run_dir);
//   (*w)->Scalar("env_frames_per_s", 412.5, /*step=*/3);
//   (*w)->Flush();
// -----------------------------------------------------------------------------
#ifndef RLVLA3_RUNTIME_TFEVENTS_WRITER_H_
#define RLVLA3_RUNTIME_TFEVENTS_WRITER_H_

#include <cstdint>
#include <fstream>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace rlvla3 {

// CRC-32C (Castagnoli) of `data`, and TFRecord's masked form of a CRC.
uint32_t Crc32c(absl::string_view data);
uint32_t MaskCrc32c(uint32_t crc);

class TfEventsWriter {
 public:
  // Creates <dir>/events.out.tfevents.<time>.<host> and writes the version
  // record.
  static absl::StatusOr<std::unique_ptr<TfEventsWriter>> Open(
      const std::string& dir);
  // Buffers one scalar event; Flush writes the buffer out and reports the
  // first failed write since Open (the file and the reason).
  void Scalar(absl::string_view tag, double value, int64_t step);
  absl::Status Flush();
  const std::string& path() const { return path_; }

  // One TFRecord around `payload` (exposed for tests).
  static std::string Frame(absl::string_view payload);
  // A serialised Event with one scalar summary value (exposed for tests).
  static std::string ScalarEvent(absl::string_view tag, float value,
                                 int64_t step, double wall_time);

 private:
  TfEventsWriter(std::ofstream out, std::string path)
      : out_(std::move(out)), path_(std::move(path)) {}
  std::ofstream out_;
  std::string path_;
};

}  // namespace rlvla3

#endif  // RLVLA3_RUNTIME_TFEVENTS_WRITER_H_
