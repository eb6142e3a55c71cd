#pragma once
// The headless host's function (hostsim/host_function.h) for unit tests: a failed expectation of
// its driver code is a GoogleTest failure of the running test, which goes on.
#include <gtest/gtest.h>

#include <string>

#include "hostsim/host_function.h"

namespace hcaemu::model::test {

using namespace hcaemu::hostsim;
using TestFunction = hostsim::HostFunction;

// The command statuses HostFunction::run returns that the firmware tests check most.
inline constexpr uint8_t kOk = 0;
inline constexpr uint8_t kBadParameter = uint8_t(CommandStatus::kBadParameter);
inline constexpr uint8_t kBadResource = uint8_t(CommandStatus::kBadResource);
inline constexpr uint8_t kBadResourceState = uint8_t(CommandStatus::kBadResourceState);
inline constexpr uint8_t kBadIndex = uint8_t(CommandStatus::kBadIndex);
inline constexpr uint8_t kExceedLimit = uint8_t(CommandStatus::kExceedLimit);
inline constexpr uint8_t kBadInputLength = uint8_t(CommandStatus::kBadInputLength);

inline const bool kHostFailuresAreTestFailures = [] {
  hostsim::set_failure_handler([](std::string_view what) { ADD_FAILURE() << "hostsim: " << what; });
  return true;
}();

}  // namespace hcaemu::model::test
