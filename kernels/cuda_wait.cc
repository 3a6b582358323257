#include "sluice/kernels/cuda_wait.h"

namespace sluice {

cudaError_t SynchronizeWithin(cudaStream_t stream, std::chrono::milliseconds limit) {
  cudaEvent_t done = nullptr;
  cudaError_t err = cudaEventCreateWithFlags(&done, cudaEventDisableTiming);
  if (err != cudaSuccess) return err;
  err = cudaEventRecord(done, stream);
  if (err == cudaSuccess) err = PollWithin([done] { return cudaEventQuery(done); }, limit);
  // An event still pending is released once the device completes it.
  cudaEventDestroy(done);
  return err;
}

}  // namespace sluice
