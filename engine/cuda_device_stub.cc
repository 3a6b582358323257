// The CUDA device in a build without CUDA: it never exists.
#include "sluice/engine/cuda_device.h"

namespace sluice {

bool CudaDeviceBuilt() { return false; }

int CudaDeviceCount() { return 0; }

absl::StatusOr<std::shared_ptr<Device>> CreateCudaDevice(const CudaDeviceOptions&) {
  return absl::UnavailableError("this build of Sluice has no CUDA device (nvcc was not found)");
}

absl::Status FailCudaDeviceForTesting(Device&) {
  return absl::UnimplementedError("this build of Sluice has no CUDA device");
}

absl::Status BreakCudaContextForTesting(Device&) {
  return absl::UnimplementedError("this build of Sluice has no CUDA device");
}

}  // namespace sluice
