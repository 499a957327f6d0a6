#include "runtime/logging.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <memory>

namespace rlvla3 {
namespace {

// One JSON object per record: UTC time with milliseconds, level, message.
class JsonLineFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg,
              spdlog::memory_buf_t& dest) override {
    const auto t = msg.time.time_since_epoch();
    const auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(t).count();
    const std::time_t secs = static_cast<std::time_t>(ms / 1000);
    std::tm utc{};
    gmtime_r(&secs, &utc);
    char stamp[40];
    const size_t n =
        std::strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &utc);
    std::snprintf(stamp + n, sizeof(stamp) - n, ".%03dZ",
                  static_cast<int>(ms % 1000));
    const spdlog::string_view_t level =
        spdlog::level::to_string_view(msg.level);
    const std::string line =
        "{\"ts\":\"" + std::string(stamp) +
        "\",\"level\":" + JsonQuoted(std::string(level.data(), level.size())) +
        ",\"msg\":" +
        JsonQuoted(std::string(msg.payload.data(), msg.payload.size())) + "}\n";
    dest.append(line.data(), line.data() + line.size());
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<JsonLineFormatter>();
  }
};

}  // namespace

std::string JsonQuoted(const std::string& text) {
  std::string out = "\"";
  for (unsigned char ch : text) {
    switch (ch) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (ch < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", ch);
          out += buf;
        } else {
          out.push_back(static_cast<char>(ch));
        }
    }
  }
  return out + "\"";
}

void InitLogging(const std::string& level, const std::string& format) {
  auto logger = spdlog::get("rl-vla3");
  if (!logger) logger = spdlog::stderr_color_mt("rl-vla3");
  spdlog::set_default_logger(logger);
  if (format == "json") {
    spdlog::set_formatter(std::make_unique<JsonLineFormatter>());
  } else {
    spdlog::set_pattern("%H:%M:%S.%e %^%L%$ %v");
  }
  spdlog::set_level(spdlog::level::from_str(level));
}

}  // namespace rlvla3
