// What the typed conformance and kernel suites need from a ResidentDispatch implementation:
// fresh dispatchers on one backend, and that backend's device counters.
#ifndef SLUICE_TESTS_TESTING_DISPATCH_HARNESS_H_
#define SLUICE_TESTS_TESTING_DISPATCH_HARNESS_H_

#include <memory>

#include "absl/status/statusor.h"
#include "client/resident_dispatch.h"
#include "engine/device.h"

namespace sluice::testing {

class DispatchHarness {
 public:
  virtual ~DispatchHarness() = default;
  // A new dispatcher instance on the harness's backend (same device, new instance).
  virtual absl::StatusOr<std::unique_ptr<ResidentDispatch>> NewDispatch() = 0;
  // Counters of the device behind every dispatcher of this harness.
  virtual absl::StatusOr<DeviceCounters> Counters() = 0;
  // Not OK when the backend cannot exist on this machine (a GPU suite without a GPU): the
  // suites skip then, saying why.
  virtual absl::Status Available() { return absl::OkStatus(); }
};

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_TESTING_DISPATCH_HARNESS_H_
