#pragma once
// The headless host's function (hostsim/host_function.h) for unit tests: a failed expectation of
// its driver code is a GoogleTest failure of the running test, which goes on.
#include <gtest/gtest.h>

#include <string>

#include "hostsim/host_function.h"

namespace hcaemu::model::test {

using namespace hcaemu::hostsim;
using TestFunction = hostsim::HostFunction;

inline const bool kHostFailuresAreTestFailures = [] {
  hostsim::set_failure_handler([](std::string_view what) { ADD_FAILURE() << "hostsim: " << what; });
  return true;
}();

}  // namespace hcaemu::model::test
