#include "server/core/device_factory.h"

#include "absl/strings/str_format.h"
#include "server/core/cpu_device.h"

namespace sluice {

absl::StatusOr<std::shared_ptr<Device>> CreateDevice(std::string_view backend,
                                                     const DeviceOptions& options) {
  if (backend != "cpu" && backend != "cuda" && backend != "auto") {
    return absl::InvalidArgumentError(absl::StrFormat(
        "unknown backend \"%s\" (expected auto, cpu or cuda)", backend));
  }
  if (backend == "cuda") {
    return absl::UnavailableError("this build of Sluice has no CUDA device");
  }
  absl::StatusOr<std::shared_ptr<CpuDevice>> cpu = CpuDevice::Create(
      {.memory_limit = options.cpu_memory_limit, .threads = options.cpu_threads});
  if (!cpu.ok()) return cpu.status();
  return std::shared_ptr<Device>(std::move(*cpu));
}

}  // namespace sluice
