// A wait on a CUDA stream that gives up: for the few places (the graph-loop probe, the check
// that a context still runs work) where an unbounded wait could hang the whole process on a GPU
// that misbehaves. Only compiled where nvcc exists.
#ifndef SLUICE_KERNELS_CUDA_WAIT_H_
#define SLUICE_KERNELS_CUDA_WAIT_H_

#include <cuda_runtime_api.h>

#include <chrono>

namespace sluice {

// Waits until everything enqueued on `stream` so far has finished, or `limit` has passed.
// Returns cudaSuccess, the first error the stream's work or the wait reported, or
// cudaErrorTimeout when the work was still running at the limit (it may go on running).
cudaError_t SynchronizeWithin(cudaStream_t stream, std::chrono::milliseconds limit);

}  // namespace sluice

#endif  // SLUICE_KERNELS_CUDA_WAIT_H_
