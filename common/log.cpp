#include "common/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>

#include <mutex>

namespace hcaemu {

spdlog::logger& log() {
  static std::shared_ptr<spdlog::logger> logger = [] {
    auto l = spdlog::stderr_color_mt("hcaemu");
    l->set_pattern("[%H:%M:%S.%e] [%^%l%$] %v");
    return l;
  }();
  return *logger;
}

bool set_log_level(std::string_view level) {
  auto parsed = spdlog::level::from_str(std::string(level));
  if (parsed == spdlog::level::off && level != "off") return false;
  log().set_level(parsed);
  return true;
}

}  // namespace hcaemu
