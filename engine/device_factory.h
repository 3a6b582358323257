// Chooses and creates the device a daemon or an embedded dispatcher runs on.
#ifndef SLUICE_ENGINE_DEVICE_FACTORY_H_
#define SLUICE_ENGINE_DEVICE_FACTORY_H_

#include <cstdint>
#include <memory>
#include <string_view>

#include "absl/status/statusor.h"
#include "sluice/engine/cuda_device.h"
#include "sluice/engine/device.h"

namespace sluice {

struct DeviceOptions {
  uint64_t cpu_memory_limit = 0;   // 0: half of PhysicalMemoryBytes()
  int cpu_threads = 0;             // 0: every hardware thread
  int cuda_ordinal = 0;            // which GPU
  uint64_t cuda_memory_limit = 0;  // 0: 90% of the GPU's free memory
  // Page-locked host memory the CUDA device's read arenas may hold (see CudaDeviceOptions).
  uint64_t cuda_pinned_read_bytes = kCudaDefaultPinnedReadBytes;
};

// `backend` is "cpu", "cuda" or "auto" (CUDA when this build has it and a GPU is present,
// else the CPU). InvalidArgument for another name; Unavailable when "cuda" is asked for and
// this build or machine has no usable GPU.
absl::StatusOr<std::shared_ptr<Device>> CreateDevice(std::string_view backend,
                                                     const DeviceOptions& options);

}  // namespace sluice

#endif  // SLUICE_ENGINE_DEVICE_FACTORY_H_
