// What the typed conformance and kernel suites need from a ResidentDispatch implementation:
// fresh dispatchers on one backend, and that backend's device counters.
#ifndef SLUICE_TESTS_TESTING_DISPATCH_HARNESS_H_
#define SLUICE_TESTS_TESTING_DISPATCH_HARNESS_H_

#include <memory>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "sluice/client/resident_dispatch.h"
#include "sluice/engine/device.h"

namespace sluice::testing {

class DispatchHarness {
 public:
  virtual ~DispatchHarness() = default;
  // A new dispatcher instance on the harness's backend (same device, new instance).
  virtual absl::StatusOr<std::unique_ptr<ResidentDispatch>> NewDispatch() = 0;
  // Counters of the device behind every dispatcher of this harness.
  virtual absl::StatusOr<DeviceCounters> Counters() = 0;
  // Not OK when the backend cannot exist on this machine (a GPU suite without a GPU): the
  // suites skip then, saying why, or fail where the backend is Required().
  virtual absl::Status Available() { return absl::OkStatus(); }
  // Whether a backend that is not Available() fails the tests instead of skipping them.
  virtual bool Required() { return false; }
};

// In a test body or SetUp: skips the test when HARNESS's backend is not available on this
// machine, or fails it, quoting why, where the backend is required. Either way the test goes no
// further (a missing device is never dereferenced).
#define SLUICE_SKIP_OR_FAIL_WITHOUT_BACKEND(harness)                                 \
  if (const absl::Status sluice_available = (harness).Available();                 \
      !sluice_available.ok()) {                                                    \
    if ((harness).Required()) {                                                    \
      FAIL() << sluice_available;                                                  \
    } else {                                                                       \
      GTEST_SKIP() << "backend not present on this machine: " << sluice_available; \
    }                                                                              \
  }

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_TESTING_DISPATCH_HARNESS_H_
