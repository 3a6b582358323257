// LocalDispatch over the CUDA device, shared by every dispatcher the harness makes. Without a
// GPU (or without CUDA in the build) Available() says so and the suites skip.
#ifndef SLUICE_TESTS_TESTING_LOCAL_CUDA_HARNESS_H_
#define SLUICE_TESTS_TESTING_LOCAL_CUDA_HARNESS_H_

#include <cstdlib>
#include <memory>

#include "absl/strings/str_cat.h"
#include "sluice/client/local_dispatch.h"
#include "sluice/engine/cuda_device.h"
#include "tests/testing/dispatch_harness.h"

namespace sluice::testing {

class LocalCudaHarness : public DispatchHarness {
 public:
  explicit LocalCudaHarness(CudaDeviceOptions options = {.memory_limit = uint64_t{8} << 30}) {
    absl::StatusOr<std::shared_ptr<Device>> device = CreateCudaDevice(options);
    if (device.ok()) device_ = *device;
    available_ = device.status();
  }

  // Where a GPU must exist (tests/gpu/run.sh sets SLUICE_REQUIRE_GPU=1), its absence fails
  // every test with the reason the device could not be created; elsewhere the tests skip.
  absl::Status Available() override {
    if (available_.ok() || !Required()) return available_;
    return absl::FailedPreconditionError(
        absl::StrCat("a GPU is required here (SLUICE_REQUIRE_GPU is set) but the CUDA device "
                     "could not be created: ",
                     available_.ToString()));
  }
  bool Required() override { return std::getenv("SLUICE_REQUIRE_GPU") != nullptr; }
  absl::StatusOr<std::unique_ptr<ResidentDispatch>> NewDispatch() override {
    if (!available_.ok()) return available_;
    absl::StatusOr<std::unique_ptr<LocalDispatch>> dispatch =
        LocalDispatch::Create({.device = device_});
    if (!dispatch.ok()) return dispatch.status();
    return std::unique_ptr<ResidentDispatch>(std::move(*dispatch));
  }
  absl::StatusOr<DeviceCounters> Counters() override {
    if (!available_.ok()) return available_;
    return device_->counters();
  }
  const std::shared_ptr<Device>& device() const { return device_; }

 private:
  std::shared_ptr<Device> device_;
  absl::Status available_;
};

// The same, with repeated groups replayed one graph launch per iteration: the CUDA device's
// form where graph loops are unavailable.
class LocalCudaReplayHarness : public LocalCudaHarness {
 public:
  LocalCudaReplayHarness()
      : LocalCudaHarness({.memory_limit = uint64_t{8} << 30, .graph_loops = false}) {}
};

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_TESTING_LOCAL_CUDA_HARNESS_H_
