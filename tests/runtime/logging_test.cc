// run.log_format json: every log line is one JSON object a collector parses,
// whatever the message holds.
#include "runtime/logging.h"

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace rlvla3 {
namespace {

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

TEST(Logging, JsonFormatWritesOneParsableObjectPerLine) {
  InitLogging("info", "json");
  testing::internal::CaptureStderr();
  spdlog::info("learner: version {}, quote \" backslash \\ tab \t done", 3);
  spdlog::warn("second\nline");
  spdlog::debug("below the level");
  spdlog::default_logger()->flush();
  const std::vector<std::string> lines =
      Lines(testing::internal::GetCapturedStderr());
  InitLogging("info", "text");
  ASSERT_EQ(lines.size(), 2u);
  const nlohmann::json first = nlohmann::json::parse(lines[0]);
  EXPECT_EQ(first["level"], "info");
  EXPECT_EQ(first["msg"],
            "learner: version 3, quote \" backslash \\ tab \t done");
  const std::string ts = first["ts"];
  EXPECT_EQ(ts.size(), 24u) << ts;  // 2026-11-26T23:59:01.123Z
  EXPECT_EQ(ts.back(), 'Z');
  const nlohmann::json second = nlohmann::json::parse(lines[1]);
  EXPECT_EQ(second["level"], "warning");
  EXPECT_EQ(second["msg"], "second\nline");
}

TEST(Logging, TextFormatIsNotJson) {
  InitLogging("info", "text");
  testing::internal::CaptureStderr();
  spdlog::info("plain");
  spdlog::default_logger()->flush();
  const std::string text = testing::internal::GetCapturedStderr();
  EXPECT_NE(text.find("plain"), std::string::npos);
  EXPECT_NE(text.front(), '{') << text;
}

}  // namespace
}  // namespace rlvla3
