#include "runtime/tfevents_writer.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <sstream>

#include "tests/test_dir.h"

namespace rlvla3 {
namespace {

TEST(Crc32c, KnownVectors) {
  EXPECT_EQ(Crc32c("123456789"), 0xE3069283u);  // the CRC-32C check value
  EXPECT_EQ(Crc32c(""), 0u);
  std::string zeros(32, '\0');
  EXPECT_EQ(Crc32c(zeros), 0x8A9136AAu);  // RFC 3720 B.4
}

TEST(TfEvents, FramesHaveValidCrcs) {
  const std::string payload = TfEventsWriter::ScalarEvent("loss", 0.5f, 7, 1.0);
  const std::string f = TfEventsWriter::Frame(payload);
  ASSERT_EQ(f.size(), 8 + 4 + payload.size() + 4);
  uint64_t len;
  std::memcpy(&len, f.data(), 8);
  EXPECT_EQ(len, payload.size());
  uint32_t lcrc, dcrc;
  std::memcpy(&lcrc, f.data() + 8, 4);
  std::memcpy(&dcrc, f.data() + 12 + payload.size(), 4);
  EXPECT_EQ(lcrc, MaskCrc32c(Crc32c(f.substr(0, 8))));
  EXPECT_EQ(dcrc, MaskCrc32c(Crc32c(payload)));
  // The tag and the float are in the Event, wire-encoded.
  EXPECT_NE(payload.find("loss"), std::string::npos);
  float half = 0.5f;
  EXPECT_NE(payload.find(std::string(reinterpret_cast<char*>(&half), 4)),
            std::string::npos);
}

TEST(TfEvents, WritesVersionRecordThenScalars) {
  const testutil::TestDir dir;
  auto w = TfEventsWriter::Open(dir.path());
  ASSERT_TRUE(w.ok()) << w.status();
  (*w)->Scalar("a", 1.0, 1);
  EXPECT_TRUE((*w)->Flush().ok());
  std::ifstream in((*w)->path(), std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string data = ss.str();
  EXPECT_NE(data.find("brain.Event:2"), std::string::npos);
  // Walk the records: every length and CRC checks out.
  size_t pos = 0;
  int records = 0;
  while (pos < data.size()) {
    uint64_t len;
    std::memcpy(&len, data.data() + pos, 8);
    uint32_t dcrc;
    std::memcpy(&dcrc, data.data() + pos + 12 + len, 4);
    EXPECT_EQ(dcrc, MaskCrc32c(Crc32c(data.substr(pos + 12, len))));
    pos += 16 + len;
    ++records;
  }
  EXPECT_EQ(pos, data.size());
  EXPECT_EQ(records, 2);
}

}  // namespace
}  // namespace rlvla3
