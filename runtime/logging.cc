#include "runtime/logging.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace rlvla3 {

void InitLogging(const std::string& level) {
  auto logger = spdlog::get("rl-vla3");
  if (!logger) logger = spdlog::stderr_color_mt("rl-vla3");
  spdlog::set_default_logger(logger);
  spdlog::set_pattern("%H:%M:%S.%e %^%L%$ %v");
  spdlog::set_level(spdlog::level::from_str(level));
}

}  // namespace rlvla3
