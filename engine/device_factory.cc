#include "sluice/engine/device_factory.h"

#include "absl/strings/str_format.h"
#include "sluice/engine/cpu_device.h"
#include "sluice/engine/cuda_device.h"

namespace sluice {

absl::StatusOr<std::shared_ptr<Device>> CreateDevice(std::string_view backend,
                                                     const DeviceOptions& options) {
  if (backend != "cpu" && backend != "cuda" && backend != "auto") {
    return absl::InvalidArgumentError(absl::StrFormat(
        "unknown backend \"%s\" (expected auto, cpu or cuda)", backend));
  }
  if (backend == "cuda" || (backend == "auto" && CudaDeviceCount() > 0)) {
    absl::StatusOr<std::shared_ptr<Device>> cuda = CreateCudaDevice(
        {.ordinal = options.cuda_ordinal,
         .memory_limit = options.cuda_memory_limit,
         .pinned_read_bytes = options.cuda_pinned_read_bytes});
    if (cuda.ok() || backend == "cuda") return cuda;
    // auto: a GPU that cannot be used leaves the CPU.
  }
  absl::StatusOr<std::shared_ptr<CpuDevice>> cpu = CpuDevice::Create(
      {.memory_limit = options.cpu_memory_limit, .threads = options.cpu_threads});
  if (!cpu.ok()) return cpu.status();
  return std::shared_ptr<Device>(std::move(*cpu));
}

}  // namespace sluice
