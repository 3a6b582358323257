#include "sluice/engine/cuda/cub_steps.h"

#include <algorithm>

#include "absl/synchronization/mutex.h"
#include "sluice/base/status_macros.h"
#include "sluice/kernels/cuda_launcher.h"

namespace sluice {

absl::Status CubSteps::EnsureTemp(size_t bytes) {
  if (bytes <= temp_bytes_) return absl::OkStatus();
  if (temp_ != nullptr) {
    CUDA_RETURN_IF_ERROR(device_, cudaStreamSynchronize(stream_));
    const cudaError_t freed = cudaFree(temp_);
    temp_ = nullptr;
    device_->ReleaseScratch(temp_bytes_);
    temp_bytes_ = 0;
    CUDA_RETURN_IF_ERROR(device_, freed);
  }
  const size_t size = std::max<size_t>(bytes, 1 << 20);
  RETURN_IF_ERROR(device_->ReserveScratch(size));
  if (const cudaError_t err = cudaMalloc(&temp_, size); err != cudaSuccess) {
    temp_ = nullptr;
    device_->ReleaseScratch(size);
    return device_->Fail(err, "cudaMalloc", __FILE__, __LINE__);
  }
  temp_bytes_ = size;
  return absl::OkStatus();
}

absl::StatusOr<bool> CubSteps::Launch(const PlannedStep& step) {
  const CudaFastPath* path = FindCudaFastPath(step.kernel);
  if (path == nullptr || !path->applies(step.args)) return false;
  absl::ReaderMutexLock no_capture(&device_->capture_mutex());
  size_t bytes = 0;
  CUDA_RETURN_IF_ERROR(device_, path->temp_bytes(step.args, &bytes, stream_));
  // The temporary storage is an optimization: without memory for it the portable passes run.
  if (absl::Status temp = EnsureTemp(bytes); !temp.ok()) {
    if (absl::IsResourceExhausted(temp)) return false;
    return temp;
  }
  CUDA_RETURN_IF_ERROR(device_, path->run(step.args, temp_, temp_bytes_, stream_));
  return true;
}

void CubSteps::Release(bool context_alive) {
  if (temp_ != nullptr && context_alive) {
    device_->FailUnawaited(cudaFree(temp_), "cudaFree (CUB's temporary storage)", __FILE__,
                           __LINE__);
  }
  temp_ = nullptr;
  device_->ReleaseScratch(temp_bytes_);
  temp_bytes_ = 0;
}

}  // namespace sluice
