// A wait on a CUDA stream that gives up: for the few places (the graph-loop probe, the check
// that a context still runs work) where an unbounded wait could hang the whole process on a GPU
// that misbehaves. Only compiled where nvcc exists.
#ifndef SLUICE_KERNELS_CUDA_WAIT_H_
#define SLUICE_KERNELS_CUDA_WAIT_H_

#include <cuda_runtime_api.h>

#include <chrono>
#include <thread>

namespace sluice {

// Waits until everything enqueued on `stream` so far has finished, or `limit` has passed.
// Returns cudaSuccess, the first error the stream's work or the wait reported, or
// cudaErrorTimeout when the work was still running at the limit (it may go on running).
cudaError_t SynchronizeWithin(cudaStream_t stream, std::chrono::milliseconds limit);

// The loop inside: calls `query` (a cudaEventQuery) until it returns anything but
// cudaErrorNotReady, which it returns, or until `limit` has passed (cudaErrorTimeout), pausing
// between calls. In the header so that a test without a GPU can drive it.
template <class Query>
cudaError_t PollWithin(Query query, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  auto pause = std::chrono::microseconds(20);
  while (true) {
    const cudaError_t err = query();
    if (err != cudaErrorNotReady) return err;
    if (std::chrono::steady_clock::now() >= deadline) return cudaErrorTimeout;
    std::this_thread::sleep_for(pause);
    if (pause < std::chrono::milliseconds(5)) pause *= 2;
  }
}

}  // namespace sluice

#endif  // SLUICE_KERNELS_CUDA_WAIT_H_
