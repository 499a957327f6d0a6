#include "runtime/tfevents_writer.h"

#include <unistd.h>

#include <array>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "runtime/text_file.h"

namespace rlvla3 {
namespace {

std::array<uint32_t, 256> MakeCrcTable() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    t[i] = c;
  }
  return t;
}

// Protobuf wire format: just what an Event with scalar summaries needs.
void Varint(uint64_t v, std::string* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}
void Tag(int field, int wire_type, std::string* out) {
  Varint(static_cast<uint64_t>(field) << 3 | static_cast<uint64_t>(wire_type),
         out);
}
void Bytes(int field, absl::string_view b, std::string* out) {
  Tag(field, 2, out);
  Varint(b.size(), out);
  out->append(b.data(), b.size());
}
template <typename T>
void Fixed(int field, T v, std::string* out) {
  Tag(field, sizeof(T) == 8 ? 1 : 5, out);
  char buf[sizeof(T)];
  std::memcpy(buf, &v, sizeof(T));  // little-endian hosts
  out->append(buf, sizeof(T));
}

double Now() { return absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch()); }

}  // namespace

uint32_t Crc32c(absl::string_view data) {
  static const std::array<uint32_t, 256> table = MakeCrcTable();
  uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : data) c = table[(c ^ b) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

uint32_t MaskCrc32c(uint32_t crc) {
  return ((crc >> 15) | (crc << 17)) + 0xA282EAD8u;
}

std::string TfEventsWriter::Frame(absl::string_view payload) {
  std::string out;
  const uint64_t len = payload.size();
  char lbuf[8];
  std::memcpy(lbuf, &len, 8);
  out.append(lbuf, 8);
  const uint32_t lcrc = MaskCrc32c(Crc32c(absl::string_view(lbuf, 8)));
  char cbuf[4];
  std::memcpy(cbuf, &lcrc, 4);
  out.append(cbuf, 4);
  out.append(payload.data(), payload.size());
  const uint32_t dcrc = MaskCrc32c(Crc32c(payload));
  std::memcpy(cbuf, &dcrc, 4);
  out.append(cbuf, 4);
  return out;
}

std::string TfEventsWriter::ScalarEvent(absl::string_view tag, float value,
                                        int64_t step, double wall_time) {
  std::string v;  // Summary.Value: tag = 1, simple_value = 2
  Bytes(1, tag, &v);
  Fixed<float>(2, value, &v);
  std::string summary;  // Summary: repeated Value value = 1
  Bytes(1, v, &summary);
  std::string e;  // Event: wall_time = 1, step = 2, summary = 5
  Fixed<double>(1, wall_time, &e);
  Tag(2, 0, &e);
  Varint(static_cast<uint64_t>(step), &e);
  Bytes(5, summary, &e);
  return e;
}

absl::StatusOr<std::unique_ptr<TfEventsWriter>> TfEventsWriter::Open(
    const std::string& dir) {
  char host[256] = "localhost";
  gethostname(host, sizeof(host) - 1);
  const std::string path = absl::StrCat(dir, "/events.out.tfevents.",
                                        static_cast<int64_t>(Now()), ".", host);
  std::ofstream out(path, std::ios::binary);
  if (!out) return absl::UnavailableError(absl::StrCat("cannot write ", path));
  std::string e;  // Event: wall_time = 1, file_version = 3
  Fixed<double>(1, Now(), &e);
  Bytes(3, "brain.Event:2", &e);
  out << Frame(e);
  return std::unique_ptr<TfEventsWriter>(
      new TfEventsWriter(std::move(out), path));
}

void TfEventsWriter::Scalar(absl::string_view tag, double value, int64_t step) {
  out_ << Frame(ScalarEvent(tag, static_cast<float>(value), step, Now()));
}

absl::Status TfEventsWriter::Flush() {
  out_.flush();
  return StreamStatus(out_, path_);
}

}  // namespace rlvla3
