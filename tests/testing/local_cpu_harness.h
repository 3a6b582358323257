// LocalDispatch over a CpuDevice shared by every dispatcher the harness makes.
#ifndef SLUICE_TESTS_TESTING_LOCAL_CPU_HARNESS_H_
#define SLUICE_TESTS_TESTING_LOCAL_CPU_HARNESS_H_

#include <memory>

#include "sluice/client/local_dispatch.h"
#include "sluice/engine/cpu_device.h"
#include "tests/testing/dispatch_harness.h"

namespace sluice::testing {

class LocalCpuHarness : public DispatchHarness {
 public:
  LocalCpuHarness() : device_(*CpuDevice::Create({.memory_limit = uint64_t{4} << 30})) {}

  absl::StatusOr<std::unique_ptr<ResidentDispatch>> NewDispatch() override {
    absl::StatusOr<std::unique_ptr<LocalDispatch>> dispatch =
        LocalDispatch::Create({.device = device_});
    if (!dispatch.ok()) return dispatch.status();
    return std::unique_ptr<ResidentDispatch>(std::move(*dispatch));
  }
  absl::StatusOr<DeviceCounters> Counters() override { return device_->counters(); }

 private:
  std::shared_ptr<CpuDevice> device_;
};

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_TESTING_LOCAL_CPU_HARNESS_H_
