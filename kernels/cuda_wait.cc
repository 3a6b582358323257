#include "kernels/cuda_wait.h"

#include <thread>

namespace sluice {

cudaError_t SynchronizeWithin(cudaStream_t stream, std::chrono::milliseconds limit) {
  cudaEvent_t done = nullptr;
  cudaError_t err = cudaEventCreateWithFlags(&done, cudaEventDisableTiming);
  if (err != cudaSuccess) return err;
  err = cudaEventRecord(done, stream);
  const auto deadline = std::chrono::steady_clock::now() + limit;
  auto pause = std::chrono::microseconds(20);
  while (err == cudaSuccess) {
    err = cudaEventQuery(done);
    if (err != cudaErrorNotReady) break;
    if (std::chrono::steady_clock::now() >= deadline) {
      err = cudaErrorTimeout;
      break;
    }
    std::this_thread::sleep_for(pause);
    if (pause < std::chrono::milliseconds(5)) pause *= 2;
  }
  // An event still pending is released once the device completes it.
  cudaEventDestroy(done);
  return err;
}

}  // namespace sluice
