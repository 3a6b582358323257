// One CUDA stream's library forms of catalog kernels: a single step whose kernel has a fast path
// in kernels/cuda_launcher.h's table (chosen by the kernel's id, never by its passes) runs it
// where it applies, instead of its portable passes, with temporary storage kept here and
// counted as the device's scratch. Private to engine/cuda/; not thread-safe: the stream's owner
// uses it, holding the device's use mutex.
#ifndef SLUICE_ENGINE_CUDA_CUB_STEPS_H_
#define SLUICE_ENGINE_CUDA_CUB_STEPS_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "sluice/engine/cuda/device_impl.h"
#include "sluice/engine/device.h"

namespace sluice {

class CubSteps {
 public:
  CubSteps(CudaDeviceImpl* device, cudaStream_t stream) : device_(device), stream_(stream) {}

  // Enqueues `step` through its kernel's fast path: true when it did; false when the portable
  // passes must run (no fast path, one that does not apply to these arguments, or no device
  // memory for its temporary storage). Errors of the device. Never during a capture: it holds
  // the device's capture mutex shared, since a library kernel may load on first use.
  absl::StatusOr<bool> Launch(const PlannedStep& step);
  // Frees the temporary storage (only uncounts it when the context is gone).
  void Release(bool context_alive);

 private:
  // Temporary storage of at least `bytes`.
  absl::Status EnsureTemp(size_t bytes) ABSL_SHARED_LOCKS_REQUIRED(device_->capture_mutex());

  CudaDeviceImpl* const device_;
  const cudaStream_t stream_;
  void* temp_ = nullptr;
  size_t temp_bytes_ = 0;  // counted as the device's scratch
};

}  // namespace sluice

#endif  // SLUICE_ENGINE_CUDA_CUB_STEPS_H_
