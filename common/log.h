#pragma once
// One logger for the whole emulator, so every component's lines look alike and one flag sets the level.
#include <spdlog/spdlog.h>

#include <string_view>

namespace hcaemu {

// Returns the shared logger ("hcaemu"); created on first use, writing to stderr.
spdlog::logger& log();

// Accepts trace, debug, info, warn, error, critical, off. Returns false for an unknown name.
bool set_log_level(std::string_view level);

}  // namespace hcaemu
